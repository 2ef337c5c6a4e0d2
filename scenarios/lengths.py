"""Token-length distributions: fixed, uniform, lognormal (given mean and median), empirical.

Each turns into integer token counts >= 1 for n requests from a numpy
Generator. The lognormal is parameterised the way traces are summarised
(mean and median), and its spread is solved so that the *clipped*
distribution has the asked-for mean. Scaling and caps (`apply_scale_cap`)
are how a scenario is fitted to a small machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from scenarios.errors import ScenarioError


@dataclass(frozen=True)
class Fixed:
    value: int

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.value, dtype=np.int64)


@dataclass(frozen=True)
class Uniform:
    lo: int
    hi: int  # inclusive

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(self.lo, self.hi + 1, size=n, dtype=np.int64)


@dataclass(frozen=True)
class Lognormal:
    """Lognormal with the given median, clipped to [lo, hi], whose clipped mean is `mean`."""

    mean: float
    median: float
    lo: int = 1
    hi: int | None = None

    @property
    def sigma(self) -> float:
        return _solve_sigma(self.mean, self.median, self.lo, self.hi)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        x = rng.lognormal(math.log(self.median), self.sigma, size=n)
        hi = self.hi if self.hi is not None else np.inf
        return np.clip(np.rint(x), self.lo, hi).astype(np.int64)

    def from_normal(self, z: np.ndarray) -> np.ndarray:
        """Lengths from standard normal draws `z` (for correlated input and output lengths)."""
        x = np.exp(math.log(self.median) + self.sigma * z)
        hi = self.hi if self.hi is not None else np.inf
        return np.clip(np.rint(x), self.lo, hi).astype(np.int64)


@dataclass(frozen=True)
class Empirical:
    """Resample (with replacement) from observed lengths, e.g. one column of a trace."""

    values: tuple[int, ...]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        assert self.values, "empirical distribution needs at least one value"
        return rng.choice(np.asarray(self.values, dtype=np.int64), size=n, replace=True)


LengthDist = Fixed | Uniform | Lognormal | Empirical


def apply_scale_cap(n_tokens: np.ndarray, scale: float = 1.0, cap: int | None = None) -> np.ndarray:
    """Multiply lengths by `scale`, round, keep them >= 1 and <= `cap`."""
    assert scale > 0, scale
    out = np.maximum(np.rint(n_tokens * scale), 1) if scale != 1.0 else np.asarray(n_tokens)
    if cap is not None:
        out = np.minimum(out, cap)
    return out.astype(np.int64)


def _phi(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def clipped_mean(median: float, sigma: float, lo: float, hi: float | None) -> float:
    """E[clip(X, lo, hi)] for X lognormal with this median and log-sd sigma (closed form)."""
    mu = math.log(median)
    a = (math.log(lo) - mu) / sigma if lo > 0 else -math.inf
    b = (math.log(hi) - mu) / sigma if hi is not None else math.inf
    inner = math.exp(mu + sigma * sigma / 2) * (_phi(b - sigma) - _phi(a - sigma))
    below = lo * _phi(a) if lo > 0 else 0.0
    above = hi * (1.0 - _phi(b)) if hi is not None else 0.0
    return below + inner + above


@lru_cache(maxsize=256)
def _solve_sigma(mean: float, median: float, lo: int, hi: int | None) -> float:
    if mean <= 0 or median <= 0:
        raise ScenarioError(f"lognormal mean and median must be > 0, got mean={mean}, median={median}")
    if math.isclose(mean, median, rel_tol=1e-9):
        return 1e-9
    if mean < median:
        raise ScenarioError(f"lognormal needs mean >= median, got mean={mean} < median={median}; "
                            "use a uniform or empirical distribution for left-skewed lengths")
    # the clipped mean rises from the median as sigma grows; find the first crossing on a grid, then bisect
    grid = np.linspace(1e-3, 6.0, 600)
    f = [clipped_mean(median, s, lo, hi) - mean for s in grid]
    for i in range(1, len(grid)):
        if f[i - 1] < 0 <= f[i]:
            a, b = float(grid[i - 1]), float(grid[i])
            for _ in range(60):
                m = (a + b) / 2
                a, b = (m, b) if clipped_mean(median, m, lo, hi) < mean else (a, m)
            return (a + b) / 2
    raise ScenarioError(f"a lognormal with median {median} clipped to [{lo}, {hi}] cannot have mean {mean}; "
                        "raise `max` or lower `mean`")
