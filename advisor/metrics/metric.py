"""What one per-request metric declares: its key, header, unit, which way is better, how a request record gives
its values, what it means, and where it is shown. Each metric is one module in `advisor/metrics/defs/` that
makes one `Metric`; `advisor.metrics.registry` collects them, and every reader (the summary, result.json, the
console, `compare`, the report and the dashboard) takes the list from there.

Which tail is the worst follows from `better`: for a time (lower is better) it is the high percentiles (p90,
p95, p99), for a rate per user (higher is better) the low ones (p10, p5, p1). `tail(90)` gives the percentile
of the worst 10% either way, so a table that shows "the worst tail" asks the metric, never a fixed list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from advisor.loadgen.records import RequestRecord

Better = Literal["lower", "higher"]


@dataclass(frozen=True)
class Metric:
    key: str  # result.json's summary key of its distribution, ending in its unit ("ttft_ms")
    header: str  # as the console, compare, the report and the dashboard label it
    unit: str
    better: Better
    of: Callable[[RequestRecord], float | None] | Callable[[RequestRecord], list[float]]
    definition: str  # one line for the report's definitions; docs/metrics.md holds the full one
    order: int  # its place in every table (lowest first)
    pooled: bool = False  # `of` gives a list per request (one value per token), pooled over requests
    over_sent: bool = False  # every sent measured request (the load generator's own lag), not only the ok ones
    console: bool = True  # a row of `bench`'s latency table
    percentiles: tuple[float, ...] = ()  # its headline figures: compare, repeat groups, the report's tables
    headline: float | None = None  # the percentile the short views (dashboard tables, CDF and load charts) show
    # which of its headline figures are columns of the report's two run tables, None: all of them. The tables
    # must fit a 1400 px page beside the run's rates, SLOs and costs, so a metric a buyer reads elsewhere
    # (compare, the console, the dashboard, result.json) may give fewer or none; its definition is there always
    report: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        assert "_" in self.key, f"a metric key ends in its unit (ttft_ms), got {self.key!r}"
        assert self.better in ("lower", "higher"), self.better
        assert self.headline is None or self.headline in self.percentiles, "a headline percentile is a headline figure"
        assert set(self.report or ()) <= set(self.percentiles), "a report column is one of its headline figures"

    @property
    def report_percentiles(self) -> tuple[float, ...]:
        """The headline figures the report's run tables show as columns."""
        return self.percentiles if self.report is None else self.report

    def values(self, rec: RequestRecord) -> Iterable[float]:
        """This request's values: none, one, or (pooled) one per token."""
        if self.pooled:
            return self.of(rec)  # type: ignore[return-value]
        v = self.of(rec)
        return () if v is None else (v,)  # type: ignore[return-value]

    def tail(self, percentile: float) -> float:
        """The percentile of the worst (100 - p)% of requests: 95 -> 95 for a time, 5 for a rate (higher is better)."""
        return float(percentile) if self.better == "lower" else 100.0 - float(percentile)

    def figure_key(self, p: float) -> str:
        """'ttft_ms' at 95 -> 'ttft_p95_ms': the name `compare --figures` takes."""
        stem, _, unit = self.key.rpartition("_")
        return f"{stem}_p{p:g}_{unit}"
