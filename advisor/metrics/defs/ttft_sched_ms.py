"""TTFT from schedule (`ttft_sched_ms`), as docs/metrics.md defines it; `per_request.ttft_sched_ms` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="ttft_sched_ms", header="TTFT from schedule", unit="ms", better="lower", of=pr.ttft_sched_ms, order=20,
    definition="t_first - t_sched: TTFT with the client's queueing (open loop: no coordinated omission)",
)
