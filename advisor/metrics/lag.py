"""Did the load generator keep up? The send-lag rule, with its sample size, in one place.

Send lag is t_send - t_sched per request. A late send distorts two things:
the offered load (arrivals shift) and the latencies (a client too busy to send
on time is also too busy to stamp chunks on time). So the limit scales with
both (docs/metrics.md, "Validity" gives the reasoning):

    L = max(LAG_FLOOR_MS, min(LAG_LATENCY_FRACTION x TTFT p50, LAG_GAP_FRACTION x mean gap))

5 ms, or more when both the latencies being measured and the gaps between
arrivals are long enough that the extra lag stays under 5% of the former and
10% of the latter. The claim "at most 1% of sends were later than L" (a p99
bound) is then tested with the sample it has: the run fails the check only
when the count of late sends is so high that, were only 1% late, a count this
high would happen less than 5% of the time (exact one-sided binomial test).
With 118 requests that takes 4 late sends, with 1,000 it takes 16: a single
slow send in a short run does not flip the verdict, and a long run is held
close to the 1% line.

A load generator *holds* a rate (`held`) when it achieved at least 95% of it,
with no errors, and its sends passed this rule: the one criterion of
benchmarks/loadgen.py and of every result's `loadgen.held`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fileform import FileForm

LAG_FLOOR_MS = 5.0  # the load generator's own bound ("held", docs/metrics.md)
LAG_LATENCY_FRACTION = 0.05  # of the TTFT median
LAG_GAP_FRACTION = 0.10  # of the mean gap between arrivals
LATE_FRACTION = 0.01  # p99: at most 1% of sends may be later than the limit
CONFIDENCE = 0.95  # evidence needed to call the run's sends late
HELD_RATE_FRACTION = 0.95  # a rate is held when at least this fraction of it was achieved


def lag_limit_ms(ttft_p50_ms: float | None, arrival_rps: float | None) -> float:
    """The send-lag limit L for a run with this TTFT median and arrival rate (None: unknown, the floor)."""
    if not ttft_p50_ms or not arrival_rps or ttft_p50_ms <= 0 or arrival_rps <= 0:
        return LAG_FLOOR_MS
    relative = min(LAG_LATENCY_FRACTION * ttft_p50_ms, LAG_GAP_FRACTION * 1000.0 / arrival_rps)
    return max(LAG_FLOOR_MS, relative)


def binomial_tail(n: int, k: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), exact (log-space terms)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)

    def term(i: int) -> float:
        return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q)

    if k <= n * p:  # most of the mass is at or above k: sum the short side instead
        return max(0.0, 1.0 - sum(term(i) for i in range(k)))
    total, i = 0.0, k
    while i <= n:
        t = term(i)
        total += t
        if t < 1e-17 * total:
            break
        i += 1
    return min(1.0, total)


def critical_count(n: int, late_fraction: float = LATE_FRACTION, confidence: float = CONFIDENCE) -> int:
    """The fewest late sends out of n that show, at `confidence`, that more than `late_fraction` were late."""
    k = max(1, math.floor(n * late_fraction))
    while k <= n and binomial_tail(n, k, late_fraction) >= 1 - confidence:
        k += 1
    return k


@dataclass(frozen=True, slots=True)
class LagCheck(FileForm):
    limit_ms: float  # L for this run
    n: int  # sends judged
    n_late: int  # sends later than L
    critical: int  # late sends that would fail the check
    ok: bool
    # late sends the client's own CPU wait explains: lag minus the sending thread's run-queue time before it
    # (RequestRecord.client_wait_ns) is within the limit. None: the run has no wait figures (not Linux, or older)
    n_late_waited: int | None = None

    def reason(self) -> str | None:
        """One sentence when the check failed, else None."""
        if self.ok:
            return None
        return (f"The load generator fell behind: {self.n_late} of {self.n} sends were later than the "
                f"{self.limit_ms:.3g} ms limit (t_send - t_sched), more than the {self.critical - 1} that 1% late "
                "sends could explain at 95% confidence, so the offered load was not the scheduled one; lower the "
                "rate or run the client on a less busy machine (--workers, or a core of its own)." + self._waited())

    def _waited(self) -> str:
        if self.n_late_waited is None:
            return ""
        if self.n_late_waited == 0:
            return (" None of the late sends is explained by the client waiting for its CPU behind another task "
                    "(the kernel's run-queue time): the load generator itself was busy, or its CPU did not run.")
        return (f" {self.n_late_waited} of the {self.n_late} late sends waited that long for the client's CPU "
                "behind another task (the kernel's run-queue time): other work on that CPU delayed them.")


def check_lag(lags_ms: Sequence[float], ttft_p50_ms: float | None, arrival_rps: float | None,
              waits_ms: Sequence[float | None] | None = None) -> LagCheck | None:
    """Judge a run's send lags (open loop); None when nothing was sent.

    `waits_ms`, aligned with `lags_ms`: each send's client run-queue wait (None where unknown). A late send
    whose lag minus its wait is within the limit counts as waited (`n_late_waited`): the machine's, not the
    load generator's. It is still late: the verdict does not change, its reason says which it was.
    """
    if not lags_ms:
        return None
    limit = lag_limit_ms(ttft_p50_ms, arrival_rps)
    n = len(lags_ms)
    late = sum(1 for x in lags_ms if x > limit)
    crit = critical_count(n)
    waited = None
    if waits_ms is not None and any(w is not None for w in waits_ms):
        waited = sum(1 for x, w in zip(lags_ms, waits_ms) if x > limit and w is not None and x - w <= limit)
    return LagCheck(limit_ms=round(limit, 4), n=n, n_late=late, critical=crit, ok=late < crit, n_late_waited=waited)


def not_held_why(target_rps: float, achieved_rps: float | None, n_errors: int, lag: LagCheck | None) -> str:
    """Which part of `held` failed, in words (a run can be VALID and not hold its rate: the engine completed fewer
    requests than were offered while the sends kept to the schedule, and no saturation signal fired)."""
    parts = []
    if lag is None or not lag.ok:
        parts.append("the load generator sent late (the send-lag rule failed)")
    if n_errors:
        parts.append(f"{n_errors} request(s) failed")
    if achieved_rps is not None and achieved_rps < HELD_RATE_FRACTION * target_rps:
        parts.append(f"{achieved_rps:.3g} req/s completed of {target_rps:.3g} offered "
                     f"({achieved_rps / target_rps:.0%}, under {HELD_RATE_FRACTION:.0%})")
    if lag is not None and lag.ok:
        parts.append("the sends were on time, so the engine, not the load generator, fell short")
    return "; ".join(parts)


def held(target_rps: float, achieved_rps: float | None, n_errors: int, lag: LagCheck | None) -> bool:
    """Did the load generator hold `target_rps`? Achieved >= 95% of it, no errors, and the send-lag rule passed."""
    return (lag is not None and lag.ok and n_errors == 0 and achieved_rps is not None
            and achieved_rps >= HELD_RATE_FRACTION * target_rps)
