"""TTFT (`ttft_ms`), as docs/metrics.md defines it; `per_request.ttft_ms` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="ttft_ms", header="TTFT", unit="ms", better="lower", of=pr.ttft_ms, order=10,
    definition="t_first - t_send: time to the first output token, from when the request was sent",
    percentiles=(50, 95, 99), headline=95,
)
