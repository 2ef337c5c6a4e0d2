"""Confidence intervals for the median of repeated runs: distribution-free order statistics.

With n repeats of one figure sorted, x(1) <= ... <= x(n), the interval [x(j), x(n+1-j)]
holds the true median of that figure with probability 1 - 2 P(B <= j - 1), B ~ Binomial(n, 1/2),
whatever the figure's distribution (it only has to be continuous). We take the narrowest such
interval whose coverage reaches the target (95%); when even [x(1), x(n)] falls short (n < 6), that
widest interval is reported with its real coverage: 3 repeats give 75%, 4 give 87.5%, 5 give 93.75%.
One run has no interval at all. The coverage is exact, not a normal approximation, and is said
beside every interval (docs/metrics.md has the table).

The same `Interval` shape carries an estimate's error range (`from_range`), which has no coverage
probability: its `method` says where the range came from. Nothing here reads runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from fileform import FileForm

DEFAULT_CONFIDENCE = 0.95
METHOD = "order-statistic interval of the median (distribution-free, exact binomial coverage)"


def order_statistic_coverage(n: int, j: int) -> float:
    """P(x(j) <= true median <= x(n+1-j)) for n independent draws of a continuous variable."""
    assert n >= 1 and 1 <= j <= (n + 1) // 2, f"need 1 <= j <= (n+1)/2, got n={n}, j={j}"
    below = sum(math.comb(n, i) for i in range(j)) / 2.0 ** n  # P(B <= j - 1)
    return max(0.0, 1.0 - 2.0 * below)


def rank_for(n: int, confidence: float = DEFAULT_CONFIDENCE) -> int:
    """The largest j (narrowest interval) whose coverage reaches `confidence`; 1 when none does."""
    best = 1
    for j in range(1, (n + 1) // 2 + 1):
        if order_statistic_coverage(n, j) >= confidence:
            best = j
    return best


@dataclass(frozen=True)
class Interval(FileForm):
    """A central value with a range: the median of repeats and its interval, or an estimate and its error range."""

    value: float  # the median of the repeats (or the estimate)
    low: float
    high: float
    n: int  # repeats behind it (0 for an estimate)
    coverage: float | None  # probability that [low, high] holds the true median; None: not a probability
    method: str

    def __post_init__(self) -> None:
        assert self.low <= self.value <= self.high or math.isnan(self.value), (self.low, self.value, self.high)

    @property
    def is_point(self) -> bool:
        """One value and no spread known (a single run)."""
        return self.low == self.high and self.coverage is None and self.n <= 1

    def overlaps(self, other: Interval) -> bool:
        """True when the two ranges share any value: the difference is not established."""
        return self.low <= other.high and other.low <= self.high

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high

    def map(self, fn: Callable[[float], float], *, decreasing: bool = False) -> Interval:
        """The interval of fn(figure) for a monotone fn: order statistics map onto order statistics,
        so the coverage is unchanged (e.g. $/1M tokens from tokens/s, a decreasing map)."""
        lo, hi = (fn(self.high), fn(self.low)) if decreasing else (fn(self.low), fn(self.high))
        return Interval(fn(self.value), lo, hi, self.n, self.coverage, self.method)

    def text(self, fmt: str = "{:.3g}") -> str:
        """'120 [110, 140] (6 runs, 97% interval)', or just '120' for a single run."""
        v = fmt.format(self.value)
        if self.is_point:
            return v
        rng = f"{v} [{fmt.format(self.low)}, {fmt.format(self.high)}]"
        if self.coverage is None:
            return f"{rng} (estimate range)"
        return f"{rng} ({self.n} runs, {self.coverage:.0%} interval)"

    @classmethod
    def point(cls, value: float) -> Interval:
        """One run: its value, no interval (the run-to-run spread is unknown)."""
        return cls(float(value), float(value), float(value), 1, None, "single run: no interval")

    @classmethod
    def from_range(cls, value: float, low: float, high: float, method: str) -> Interval:
        """An estimate with its error range (no coverage probability; `method` says where it came from)."""
        return cls(float(value), float(min(low, value)), float(max(high, value)), 0, None, method)


def median_interval(values: Iterable[float], confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """The median of `values` (repeats of one figure) and its order-statistic interval."""
    x = np.sort(np.asarray(list(values), dtype=np.float64))
    assert x.ndim == 1 and bool(np.isfinite(x).all()), "interval values must be finite numbers"
    n = int(x.size)
    if n == 0:
        raise ValueError("no values: a median needs at least one run")
    if n == 1:
        return Interval.point(float(x[0]))
    j = rank_for(n, confidence)
    cov = order_statistic_coverage(n, j)
    return Interval(float(np.median(x)), float(x[j - 1]), float(x[n - j]), n, cov, METHOD)


def coverage_table(max_n: int = 10, confidence: float = DEFAULT_CONFIDENCE) -> list[tuple[int, int, float]]:
    """(n, j, coverage) of the interval `median_interval` picks for 2..max_n repeats (docs/metrics.md)."""
    return [(n, j, order_statistic_coverage(n, j)) for n in range(2, max_n + 1) for j in [rank_for(n, confidence)]]
