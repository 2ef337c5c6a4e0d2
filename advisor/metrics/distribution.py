"""Summary statistics of one latency (or rate) sample: n, mean, stdev, min, max, percentiles.

Percentiles use numpy's default (linear interpolation between order statistics).
A percentile is reported only when the sample is large enough for it to mean
something, n >= 1 / (1 - q): p90 needs 10 values, p95 20, p99 100, p99.9 1000;
below that it is None ("n too small"). The low tail (p10, p5, p1) is the worst tail of a metric where higher
is better (a rate per user, `Metric.tail`), with the mirror rule n >= 1 / q. Everything is a plain float or None; the JSON form
(`to_dict`/`from_dict`) follows from the fields (fileform).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from fileform import FileForm

# (key, percentile, smallest n for which it is reported)
PERCENTILES: tuple[tuple[str, float, int], ...] = (
    ("p50", 50.0, 1),
    ("p90", 90.0, 10),
    ("p95", 95.0, 20),
    ("p99", 99.0, 100),
    ("p99_9", 99.9, 1000),
)
# the low tail, reported alike (a distribution saved before it existed reads these as None)
LOW_PERCENTILES: tuple[tuple[str, float, int], ...] = (
    ("p10", 10.0, 10),
    ("p5", 5.0, 20),
    ("p1", 1.0, 100),
)
KEYS: tuple[str, ...] = ("n", "mean", "stdev", "min", "max", *(k for k, _, _ in PERCENTILES + LOW_PERCENTILES))
TRACKED: tuple[float, ...] = tuple(q for _, q, _ in PERCENTILES + LOW_PERCENTILES)


def percentile_key(percentile: float) -> str:
    """The one map from a percentile to its key ("p95"); raises ValueError on one that is not tracked."""
    for key, q, _ in PERCENTILES + LOW_PERCENTILES:
        if float(percentile) == q:
            return key
    raise ValueError(f"p{float(percentile):g} is not a percentile advisor reports; "
                     f"use one of {', '.join(f'{q:g}' for q in TRACKED)}")


def min_n(percentile: float) -> int:
    """The smallest sample that reports `percentile` (ValueError on one that is not tracked)."""
    key = percentile_key(percentile)
    return next(n for k, _, n in PERCENTILES + LOW_PERCENTILES if k == key)


def json_float(x: float | None) -> float | None:
    """A plain float, or None for missing/NaN/inf (JSON has no NaN)."""
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


@dataclass(frozen=True, slots=True)
class Distribution(FileForm):
    n: int
    mean: float | None = None
    stdev: float | None = None  # population stdev (ddof=0), as vLLM's bench serve reports it
    min: float | None = None
    max: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    p99_9: float | None = None
    p10: float | None = None
    p5: float | None = None
    p1: float | None = None

    @classmethod
    def from_values(cls, values: Iterable[float]) -> Distribution:
        """Statistics of `values` (all finite); an empty sample gives n=0 and all None."""
        arr = np.asarray(list(values), dtype=np.float64)
        assert arr.ndim == 1 and bool(np.isfinite(arr).all()), "distribution values must be finite numbers"
        n = int(arr.size)
        if n == 0:
            return cls(n=0)
        pct = {key: (float(np.percentile(arr, q)) if n >= min_n else None) for key, q, min_n in PERCENTILES + LOW_PERCENTILES}
        return cls(n=n, mean=float(arr.mean()), stdev=float(arr.std()), min=float(arr.min()),
                   max=float(arr.max()), **pct)

    def at(self, percentile: float) -> float | None:
        """The value at a tracked percentile (ValueError otherwise); None where n is too small for it."""
        return getattr(self, percentile_key(percentile))
