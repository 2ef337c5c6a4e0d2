"""Every per-request metric, declared once: its key, header, unit, which way is better, how one request gives
its values, and which percentiles the headline figures quote.

The summary computes a distribution per entry (`summary._distributions`), the console's latency table shows
them in this order, and `advisor.repeats.group.FIGURES` (what `compare` and the repeat table read) takes its
per-request figures from the `percentiles` here. A new metric is a function in `per_request.py`, an entry
here, and its distribution field on `RunSummary` (a test holds the two equal); docs/metrics.md defines it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from advisor.loadgen.records import RequestRecord
from advisor.metrics import per_request as pr

Better = Literal["lower", "higher"]


@dataclass(frozen=True)
class Metric:
    key: str  # the RunSummary field and JSON key of its distribution
    header: str  # as the console and compare label it
    unit: str
    better: Better
    of: Callable[[RequestRecord], float | None] | Callable[[RequestRecord], list[float]]
    pooled: bool = False  # `of` gives a list per request (one value per token), pooled over requests
    over_sent: bool = False  # every sent measured request (the load generator's own lag), not only the ok ones
    console: bool = True  # a row of `bench`'s latency table
    percentiles: tuple[float, ...] = ()  # headline figures (`advisor.repeats.group.FIGURES`): compare, repeat tables

    def values(self, rec: RequestRecord) -> Iterable[float]:
        if self.pooled:
            return self.of(rec)  # type: ignore[return-value]
        v = self.of(rec)
        return () if v is None else (v,)  # type: ignore[return-value]

    def figure_key(self, p: float) -> str:
        """'ttft_ms' at 95 -> 'ttft_p95_ms': the name `compare --only` takes."""
        stem, _, unit = self.key.rpartition("_")
        return f"{stem}_p{p:g}_{unit}"


METRICS: tuple[Metric, ...] = (
    Metric("ttft_ms", "TTFT", "ms", "lower", pr.ttft_ms, percentiles=(50, 95, 99)),
    Metric("ttft_sched_ms", "TTFT from schedule", "ms", "lower", pr.ttft_sched_ms),
    Metric("ttst_ms", "time to second token", "ms", "lower", pr.ttst_ms, percentiles=(50,)),
    Metric("tpot_ms", "TPOT", "ms", "lower", pr.tpot_ms, percentiles=(50, 95)),
    Metric("tpot_n_minus_1_ms", "TPOT (n_out - 1)", "ms", "lower", pr.tpot_n_minus_1_ms, console=False),
    Metric("ntpot_ms", "E2E / n_out", "ms", "lower", pr.ntpot_ms, console=False),
    Metric("itl_ms", "ITL", "ms", "lower", pr.itl_ms, pooled=True, percentiles=(50, 95, 99)),
    Metric("e2e_ms", "E2E", "ms", "lower", pr.e2e_ms, percentiles=(95,)),
    Metric("e2e_sched_ms", "E2E from schedule", "ms", "lower", pr.e2e_sched_ms, console=False),
    Metric("interactivity_tps", "interactivity", "tok/s", "higher", pr.interactivity_tps),
    Metric("client_queue_ms", "client lag", "ms", "lower", pr.client_queue_ms, over_sent=True),
)
METRIC_BY_KEY = {m.key: m for m in METRICS}
