"""An open-loop arrival spec -> its arrival times in a window, checked against the rate the spec states.

`draw_times` builds the process (scenarios/arrivals.py) from its spec and draws
until the window ends. A random process whose draw is far from its stated mean
rate is refused: a shape parameter so extreme (a gap CV of 100) that a one-minute
window holds either nothing or thousands of requests is not the traffic the
scenario says it is: refused when the spec's own gap CV leaves the window's
count unknown to more than ±100% (its count's std, by the renewal central limit
theorem, CV / sqrt(expected requests)), or when the draw is 10x off. Trace
replay is not checked (its times are the trace's).
"""

from __future__ import annotations

import math

import numpy as np

from scenarios import spec as S
from scenarios.arrivals import Batched, Constant, Gamma, OnOff, Poisson, Profile, TraceReplay
from scenarios.errors import ScenarioError
from scenarios.trace_files import Trace

MIN_EXPECTED = 20  # below this many expected requests a window is too short to judge a draw
MAX_RATIO = 10.0  # a draw more than this many times above (or below) its stated mean is refused
MAX_NOISE = 1.0  # a process whose own gap CV leaves a window's count unknown to more than ±100% is refused

Process = Constant | Poisson | Gamma | OnOff | Batched | Profile | TraceReplay


def make_process(a: S.ArrivalSpec, rng: np.random.Generator, trace: Trace | None = None) -> Process:
    """The process object of an open-loop arrival spec (`trace`: the workload trace, for `process: trace`)."""
    if isinstance(a, S.TraceArrival):
        assert trace is not None
        return TraceReplay(trace, a.speed, a.start_s)
    if isinstance(a, S.ConstantArrival):
        return Constant(a.rate_rps)
    if isinstance(a, S.PoissonArrival):
        return Poisson(a.rate_rps, rng)
    if isinstance(a, S.GammaArrival):
        return Gamma(a.rate_rps, a.cv, rng)
    if isinstance(a, S.ProfileArrival):
        return Profile(a.step_s, a.rates_rps, a.cv, rng)
    if isinstance(a, S.BatchedArrival):
        return Batched(a.batch_size, a.period_s, a.size_cv, a.period_cv, rng)
    assert isinstance(a, S.OnOffArrival), a
    return OnOff(a.on_rate_rps, a.on_cv, a.on_s, a.off_s, a.phase_cv, rng, a.off_cv)


def draw_times(a: S.ArrivalSpec, rng: np.random.Generator, end_s: float, limit: int,
               trace: Trace | None = None) -> tuple[list[float], list[int]]:
    """Arrival offsets before `end_s` (at most `limit`) and, for trace replay, the trace row of each."""
    proc = make_process(a, rng, trace)
    times: list[float] = []
    rows: list[int] = []
    while len(times) < limit:
        t = proc.next_time_s()
        if t is None or t >= end_s:
            break
        times.append(t)
        if isinstance(proc, TraceReplay):
            rows.append(proc.row)
    if not isinstance(proc, TraceReplay) and len(times) < limit:
        check_drawn_rate(a, len(times), proc.mean_rate_rps, end_s)
    return times, rows


def relative_noise(a: S.ArrivalSpec, expected: float) -> float:
    """The std of a window's request count relative to its mean, as the spec's own gap CV gives it (renewal CLT)."""
    if isinstance(a, S.GammaArrival | S.ProfileArrival):
        return a.cv / math.sqrt(expected)
    if isinstance(a, S.OnOffArrival):  # the in-burst gaps alone, a lower bound
        return a.on_cv / math.sqrt(expected)
    if isinstance(a, S.BatchedArrival):
        return a.period_cv / math.sqrt(expected / a.batch_size)
    if isinstance(a, S.PoissonArrival):
        return 1 / math.sqrt(expected)
    return 0.0


def check_drawn_rate(a: S.ArrivalSpec, n: int, rate_rps: float, window_s: float) -> None:
    """Refuse a draw more than MAX_RATIO times above or below the stated mean rate x window."""
    expected = rate_rps * window_s
    noise = relative_noise(a, expected) if expected >= MIN_EXPECTED else 0.0
    if expected < MIN_EXPECTED or (noise <= MAX_NOISE and expected / MAX_RATIO <= n <= expected * MAX_RATIO):
        return
    shape = a.model_dump(exclude={"process"})
    raise ScenarioError(
        f"the {a.process} arrival process {shape} drew {n:,} requests in the {window_s:g} s window, where its "
        f"mean rate of {rate_rps:.4g} req/s gives {expected:,.0f} (±{noise:.0%} from its own gap CV, over "
        f"{MAX_NOISE:.0%} or a draw over {MAX_RATIO:g}x off): its shape is too bursty for a window this "
        "short, so a run would not be the traffic the scenario states. Lower its CVs (or burst lengths), or give "
        "a longer --duration; a fitted scenario: fit it again with this version of `advisor scenarios fit`")
