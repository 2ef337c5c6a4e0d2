"""E2E from schedule (`e2e_sched_ms`), as docs/metrics.md defines it; `per_request.e2e_sched_ms` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="e2e_sched_ms", header="E2E from schedule", unit="ms", better="lower", of=pr.e2e_sched_ms, order=90,
    definition="t_last - t_sched: E2E with the client's queueing",
    console=False,
)
