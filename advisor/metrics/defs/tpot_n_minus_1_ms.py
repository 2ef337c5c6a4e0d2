"""TPOT (n_out - 1) (`tpot_n_minus_1_ms`), as docs/metrics.md defines it; `per_request.tpot_n_minus_1_ms` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="tpot_n_minus_1_ms", header="TPOT (n_out - 1)", unit="ms", better="lower", of=pr.tpot_n_minus_1_ms, order=50,
    definition="(t_last - t_first) / (n_out - 1): other tools' TPOT, short of TPOT when the first chunk held several tokens",
    console=False,
)
