"""E2E (`e2e_ms`), as docs/metrics.md defines it; `per_request.e2e_ms` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="e2e_ms", header="E2E", unit="ms", better="lower", of=pr.e2e_ms, order=80,
    definition="t_last - t_send: the whole request",
    percentiles=(95,),
)
