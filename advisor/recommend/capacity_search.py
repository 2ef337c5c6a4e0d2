"""The capacity of one sized option: the most requests in flight whose TTFT and TPOT still meet the SLOs.

The sizing model (`advisor.sizing.estimate`) gives the typical request's TTFT and TPOT at a concurrency, each
with a range from its backtest. An SLO is met only when the HIGH end of the range is within the limit (the
scenario's limits are p95 and the estimate is of the typical request, so the range's high end is what is
checked). Concurrency is searched by doubling, then bisection between the last pass and the first failure,
capped by the KV cache's `max_concurrency`; the search is cached per option and limits, so re-checks under
relaxed constraints (`explain.advise`) cost nothing.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from advisor.sizing.architecture import Architecture
from advisor.sizing.estimate import Gpu, Load, SizingEstimate, estimate
from advisor.sizing.precision import precision


@dataclass(frozen=True)
class Limits:
    """The limits checked against the high end of an estimate's ranges (None: not limited)."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None


def e2e_range_ms(e: SizingEstimate) -> tuple[float, float, float]:
    """End-to-end latency of the typical request: estimate, low and high end (TTFT + (osl - 1) x TPOT)."""
    assert e.ttft_ms is not None and e.tpot_ms is not None and e.range is not None
    (t_lo, t_hi), (p_lo, p_hi) = e.range["ttft_ms"], e.range["tpot_ms"]
    n = max(e.osl - 1, 0)
    return e.ttft_ms + n * e.tpot_ms, t_lo + n * p_lo, t_hi + n * p_hi


def meets(e: SizingEstimate, lim: Limits) -> bool:
    """Every set limit holds at the high end of its range (an estimate without figures meets nothing)."""
    if not e.estimated or e.range is None:
        return False
    for key, limit in (("ttft_ms", lim.ttft_ms), ("tpot_ms", lim.tpot_ms)):
        if limit is not None and not e.range[key][1] <= limit:
            return False
    return lim.e2e_ms is None or e2e_range_ms(e)[2] <= lim.e2e_ms


@dataclass(frozen=True)
class Capacity:
    """The search's answer: the estimate at the highest passing concurrency, or the lowest tried when none passes."""

    estimate: SizingEstimate
    passes: bool  # False: even one request in flight misses a limit at the range's high end (or no estimate)
    tried: int  # estimates made


@functools.lru_cache(maxsize=4096)
def capacity(arch: Architecture, gpu: Gpu, tp: int, engine: str, prec: str, isl: int, osl: int,
             lim: Limits) -> Capacity:
    """The highest concurrency that meets `lim` (doubling from 1, then bisection), capped by the KV cache."""
    p = precision(prec)

    def at(c: int) -> SizingEstimate:
        return estimate(arch, gpu, tp, engine, p, isl, osl, Load(concurrency=float(c)))

    first = at(1)
    if not meets(first, lim):
        return Capacity(first, False, 1)
    cap, tried = max(1, first.max_concurrency), 1
    good, good_c, bad_c = first, 1, None
    # doubling until a concurrency fails (or the cap), then bisection between the last pass and that failure
    while (good_c < cap) if bad_c is None else (bad_c - good_c > 1):
        c = min(good_c * 2, cap) if bad_c is None else (good_c + bad_c) // 2
        e, tried = at(c), tried + 1
        if meets(e, lim):
            good, good_c = e, c
        else:
            bad_c = c
    assert good.requests_per_s is not None and math.isfinite(good.requests_per_s), good
    return Capacity(good, True, tried)
