"""time to second token (`ttst_ms`), as docs/metrics.md defines it; `per_request.ttst_ms` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="ttst_ms", header="time to second token", unit="ms", better="lower", of=pr.ttst_ms, order=30,
    definition="t_second - t_send: when the second output token arrived; TTFT plus the first decode step",
    percentiles=(50,), report=(),
)
