"""client lag (`client_queue_ms`), as docs/metrics.md defines it; `per_request.client_queue_ms` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="client_queue_ms", header="client lag", unit="ms", better="lower", of=pr.client_queue_ms, order=120,
    definition="t_send - t_sched: how late the load generator sent the request (over every sent request)",
    over_sent=True,
)
