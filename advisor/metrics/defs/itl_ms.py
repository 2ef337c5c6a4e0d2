"""ITL (`itl_ms`), as docs/metrics.md defines it; `per_request.itl_ms` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="itl_ms", header="ITL", unit="ms", better="lower", of=pr.itl_ms, order=70,
    definition="per token: a chunk's gap to the previous token-carrying chunk, divided over the tokens it carried; pooled over requests",
    pooled=True, percentiles=(50, 95, 99), report=(95,),
)
