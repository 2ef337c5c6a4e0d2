"""Small statistics a fit and its report share: summaries, KS distance, gap moments, a gamma tail.

numpy has no two-sample KS distance or incomplete gamma function and scipy
is not a dependency, so those two are written here (a few lines each, the
textbook formulas). Gap statistics are computed over a sorted time array in
chunks, so a log of tens of millions of requests needs no second array of
its size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CHUNK = 1 << 20


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    median: float
    p90: float
    p99: float
    cv: float  # standard deviation / mean
    min: float
    max: float

    def get(self, stat: str) -> float:
        return float(getattr(self, stat))


def summarize(x: np.ndarray) -> Summary:
    x = np.asarray(x, dtype=np.float64)
    assert x.size > 0
    mean = float(x.mean())
    q = np.percentile(x, [50, 90, 99])
    return Summary(int(x.size), mean, float(q[0]), float(q[1]), float(q[2]),
                   float(x.std() / mean) if mean > 0 else 0.0, float(x.min()), float(x.max()))


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov distance: the largest gap between the two empirical CDFs."""
    a, b = np.sort(np.asarray(a, dtype=np.float64)), np.sort(np.asarray(b, dtype=np.float64))
    grid = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, grid, side="right") / a.size
    cdf_b = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(cdf_a - cdf_b)))


def gammaincc(a: float, x: float) -> float:
    """Regularised upper incomplete gamma Q(a, x) = P(Gamma(a, 1) > x) (series / continued fraction)."""
    if x <= 0:
        return 1.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:  # series for P(a, x)
        term = total = 1.0 / a
        n = a
        for _ in range(10_000):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    b, c, d = x + 1 - a, 1e300, 1.0 / (x + 1 - a)  # Lentz's continued fraction for Q(a, x)
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1e-300 if abs(d) < 1e-300 else d
        c = b + an / c
        c = 1e-300 if abs(c) < 1e-300 else c
        d = 1.0 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return math.exp(log_front) * h


def gamma_tail(threshold: float, mean: float, cv: float) -> float:
    """P(gap > threshold) for gamma gaps with this mean and coefficient of variation."""
    if cv <= 0:
        return 0.0 if threshold >= mean else 1.0
    shape = 1.0 / (cv * cv)
    return gammaincc(shape, threshold * shape / mean)


def gap_sum_squares(t: np.ndarray) -> float:
    """Sum of squared gaps of a sorted time array, chunk by chunk."""
    total = 0.0
    for i in range(0, t.size - 1, CHUNK):
        g = np.diff(t[i: i + CHUNK + 1])
        total += float(np.dot(g, g))
    return total


def largest_gaps(t: np.ndarray, k: int) -> np.ndarray:
    """The k largest gaps of a sorted time array, in descending order."""
    best = np.empty(0)
    for i in range(0, t.size - 1, CHUNK):
        g = np.diff(t[i: i + CHUNK + 1])
        best = np.concatenate([best, g])
        if best.size > k:
            best = np.partition(best, best.size - k)[-k:]
    return np.sort(best)[::-1]


def sample_gaps(t: np.ndarray, n_max: int, rng: np.random.Generator) -> np.ndarray:
    """Every gap when there are at most n_max, else n_max gaps at random positions."""
    if t.size - 1 <= n_max:
        return np.diff(t)
    idx = rng.choice(t.size - 1, size=n_max, replace=False)
    return t[idx + 1] - t[idx]
