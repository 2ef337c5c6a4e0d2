"""TPOT (`tpot_ms`), as docs/metrics.md defines it; `per_request.tpot_ms` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="tpot_ms", header="TPOT", unit="ms", better="lower", of=pr.tpot_ms, order=40,
    definition="(t_last - t_first) / (n_out - tokens of the first chunk): time per output token after the first chunk",
    percentiles=(50, 95), headline=95,
)
