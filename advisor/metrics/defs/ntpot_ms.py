"""E2E / n_out (`ntpot_ms`), as docs/metrics.md defines it; `per_request.ntpot_ms` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="ntpot_ms", header="E2E / n_out", unit="ms", better="lower", of=pr.ntpot_ms, order=60,
    definition="E2E / n_out: what some tools call TPOT (the wait for the first token spread over the tokens)",
    console=False,
)
