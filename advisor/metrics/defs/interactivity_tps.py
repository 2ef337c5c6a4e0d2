"""interactivity (`interactivity_tps`), as docs/metrics.md defines it; `per_request.interactivity_tps` computes it from one record."""

from __future__ import annotations

from advisor.metrics import per_request as pr
from advisor.metrics.metric import Metric

METRIC = Metric(
    key="interactivity_tps", header="interactivity", unit="tok/s", better="higher", of=pr.interactivity_tps, order=100,
    definition="1000 / TPOT: the decode tokens/s one user sees",
    percentiles=(50,), report=(),
)
