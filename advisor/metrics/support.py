"""Which percentile claims a run's sample can carry: MLPerf LoadGen's early-stopping rule.

The rule (MLPerf Inference LoadGen, `loadgen/early_stopping.cc` and the Server case of
`PerformanceSummary::EarlyStopping` in `loadgen/results.cc`, github.com/mlcommons/inference,
read 2026-11): with t requests over the latency limit, a p-th percentile limit is shown met
with confidence c = 99% only when the run also has at least h requests under it, h being the
smallest count with

    P(Binomial(h + t, 1 - p) <= t) < 1 - c

that is, a system whose true p-th percentile sat exactly at the limit would show t or fewer
over-limit requests in h + t tries less than 1% of the time. So it counts the requests over the
limit as well as n: with none over, p95 needs 90 requests, p99 459, p90 44, p50 7; each request
over the limit raises the bar. LoadGen's tolerance d is 0 here, as in its Server scenario.

A set SLO is then `met` (the rule holds), `failed` (the measured percentile is over the limit, as
LoadGen's own latency-constraint check reads it, or so many requests are over that the percentile
is over with 99% confidence), or `not established`: neither, never counted as met. A failed
request counts as over the limit (a user who got no answer did not get one in time). This never
changes a run's verdict: VALID is about the measurement, not about the SLO.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from advisor.metrics.decided import decided
from advisor.metrics.distribution import PERCENTILES, Distribution
from fileform import FileForm

CONFIDENCE = 0.99  # LoadGen's early-stopping confidence
RULE = ("MLPerf LoadGen early stopping (99% confidence, tolerance 0): met only with at least h requests under "
        "the limit, h the smallest with P(Binomial(h + t, 1 - p) <= t) < 1%, t = requests over it")
SloStatus = Literal["met", "failed", "not established"]
REPORTED_PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)


def binom_cdf(k: int, n: int, q: float) -> float:
    """P(X <= k) for X ~ Binomial(n, q), summed in log space (exact enough for n up to millions)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    assert 0.0 < q < 1.0, f"q must be in (0, 1), got {q}"
    lq, lp, lgn = math.log(q), math.log1p(-q), math.lgamma(n + 1)
    logs = [lgn - math.lgamma(x + 1) - math.lgamma(n - x + 1) + x * lq + (n - x) * lp for x in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


def odds(h: int, t: int, p: float) -> float:
    """P(t or fewer over the limit in h + t requests) when exactly a fraction 1 - p is over it."""
    return binom_cdf(t, h + t, 1.0 - p)


@cache
def min_under_limit(t: int, p: float, confidence: float = CONFIDENCE) -> int:
    """LoadGen's MinPassingQueriesFinder: the smallest h with odds(h, t, p) < 1 - confidence."""
    assert t >= 0 and 0.0 < p < 1.0 and 0.0 < confidence < 1.0, (t, p, confidence)
    lo, hi = 0, max(1, math.ceil(math.log(1.0 - confidence) / math.log(p)))  # odds(lo) fails; t = 0 answer
    while odds(hi, t, p) >= 1.0 - confidence:
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # odds falls as h grows: invariant odds(lo) >= 1 - c > odds(hi)
        mid = (lo + hi) // 2
        if odds(mid, t, p) < 1.0 - confidence:
            hi = mid
        else:
            lo = mid
    return hi


def requests_needed(n_over: int, percentile: float, confidence: float = CONFIDENCE) -> int:
    """Requests a run needs (n_over of them over the limit) for its p-th percentile to be shown under the limit."""
    return min_under_limit(n_over, percentile / 100.0, confidence) + n_over


@dataclass(frozen=True)
class PercentileSupport(FileForm):
    """Can a run of n requests show its p-th percentile under a limit at all (that is, with none over)?"""

    percentile: float
    n: int
    min_requests: int  # the smallest run that can: this many requests, none over the limit

    @property
    def supported(self) -> bool:
        return self.n >= self.min_requests

    @property
    def more_needed(self) -> int:
        return max(0, self.min_requests - self.n)

    def to_dict(self) -> dict[str, Any]:
        return {**FileForm.to_dict(self), "supported": self.supported, "more_needed": self.more_needed}


def percentile_support(n: int, percentiles: Sequence[float] = REPORTED_PERCENTILES) -> list[PercentileSupport]:
    """For each percentile: whether n requests can establish a limit on it, else how many more are needed."""
    return [PercentileSupport(float(q), int(n), requests_needed(0, q)) for q in percentiles]


@dataclass(frozen=True)
class SloCheck(FileForm):
    """One SLO (a limit on one metric's percentile) judged against one run's sample."""

    metric: str  # "ttft_ms", "tpot_ms" or "e2e_ms"
    percentile: float
    limit_ms: float
    n: int  # requests judged (successful ones with the metric defined, plus failed ones)
    n_over: int  # of those, over the limit (failed requests count as over)
    n_over_exact: bool  # False: an upper bound read off the summary's percentiles (no per-request records)
    observed_ms: float | None  # the run's measured percentile (None: too few requests to report it)
    status: SloStatus
    more_needed: int  # more requests, all under the limit, that would establish it (0 unless not established)
    n_failed: int = 0  # of n_over, requests that failed: over every limit, so no latency limit lifts them

    @property
    def failed_by_errors(self) -> bool:
        """Failed requests alone fail it, whatever the limit (so only fixing them, never a relaxation, helps)."""
        return self.status == "failed" and (self.n_failed > 0 and (
            self.observed_ms is None or self.observed_ms <= self.limit_ms
            or check_slo(self.metric, self.percentile, self.limit_ms, self.n, self.n_failed, None).status == "failed"))

    @property
    def met(self) -> bool:
        return self.status == "met"

    def text(self) -> str:
        name = f"p{self.percentile:g} {self.metric.removesuffix('_ms').upper()}"
        over = f"{self.n_over}{'' if self.n_over_exact else ' at most'} of {self.n} over {self.limit_ms:g} ms"
        if self.status == "met":
            return f"{name} met ({over})"
        if self.status == "failed":
            if self.observed_ms is None:
                return f"{name} failed: over the limit > {self.limit_ms:g} ms ({over})"
            seen, limit = decided(self.observed_ms, self.limit_ms)
            return f"{name} failed: {seen} ms > {limit} ms ({over})"
        return (f"{name} not established: {over}; needs {self.more_needed} more requests under the limit "
                "(early stopping, 99%)")

    def to_dict(self) -> dict[str, Any]:
        return {**FileForm.to_dict(self), "text": self.text(), "failed_by_errors": self.failed_by_errors}


def check_slo(metric: str, percentile: float, limit_ms: float, n: int, n_over: int, observed_ms: float | None,
              *, n_over_exact: bool = True, confidence: float = CONFIDENCE, n_failed: int = 0) -> SloCheck:
    """Met, failed or not established, by the early-stopping rule (see the module docstring).

    `n_failed`: how many of `n_over` are failed requests (counted over the limit), kept so a reader can tell a
    check failed by errors from one failed on latency."""
    assert 0 <= n_failed <= n_over <= n, (n_failed, n_over, n)
    p = percentile / 100.0
    needed = requests_needed(n_over, percentile, confidence)
    if n > 0 and n >= needed:
        status: SloStatus = "met"
    elif observed_ms is not None and observed_ms > limit_ms:
        status = "failed"
    elif (k := n_over if n_over_exact else n_failed) > 0 and 1.0 - binom_cdf(k - 1, n, 1.0 - p) < 1.0 - confidence:
        # P(this many or more over | the percentile at the limit) < 1%; without exact counts, the failed
        # requests (an exact count, each over any limit) are the overs known for certain
        status = "failed"
    else:
        status = "not established"
    more = max(0, needed - n) if status == "not established" else 0
    return SloCheck(metric, float(percentile), float(limit_ms), int(n), int(n_over), n_over_exact,
                    observed_ms, status, more, int(n_failed))


def count_over(values: Iterable[float], limit_ms: float) -> int:
    """Values strictly over the limit (LoadGen counts latency > target)."""
    return sum(1 for v in values if v > limit_ms)


_PCT_HIGHEST_FIRST = tuple(q for _, q, _ in reversed(PERCENTILES))


def n_over_bound(dist: Distribution, limit_ms: float) -> int:
    """An upper bound on the values over `limit_ms` from a saved distribution (n, min, max, percentiles).

    numpy's percentile q sits at or above the value at sorted index floor(q (n - 1)), so when the limit is
    at or above it, at most n - 1 - floor(q (n - 1)) values can be over it.
    """
    n = dist.n
    if n == 0:
        return 0
    if dist.max is not None and limit_ms >= dist.max:
        return 0
    bound = n
    for q in _PCT_HIGHEST_FIRST:
        v = dist.at(q)
        if v is not None and limit_ms >= float(v):
            bound = min(bound, n - 1 - math.floor(q / 100.0 * (n - 1)))
    return bound
