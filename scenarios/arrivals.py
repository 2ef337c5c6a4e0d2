"""Arrival processes: when each request of a schedule is sent.

One small class per process. Open-loop processes have `next_time_s()`, the
next arrival's offset in seconds from the run start (None when a replayed
trace is exhausted), and `mean_rate_rps`. The closed loop has
`next_think_s()` instead; offline sends everything at t=0. All randomness
comes from the numpy Generator handed in, so a schedule is reproducible.
"""

from __future__ import annotations

import numpy as np

from scenarios.trace_files import Trace


def gamma_gap_s(rng: np.random.Generator, rate_rps: float, cv: float) -> float:
    """One gap of a gamma renewal process with this mean rate and coefficient of variation."""
    if cv == 0:
        return 1.0 / rate_rps
    shape = 1.0 / (cv * cv)
    return float(rng.gamma(shape, 1.0 / (rate_rps * shape)))


class Constant:
    """Evenly spaced requests, the first one at t=0."""

    def __init__(self, rate_rps: float) -> None:
        self.mean_rate_rps = rate_rps
        self._n = 0

    def next_time_s(self) -> float:
        t = self._n / self.mean_rate_rps
        self._n += 1
        return t


class Poisson:
    """Independent arrivals: exponential gaps (CV 1)."""

    def __init__(self, rate_rps: float, rng: np.random.Generator) -> None:
        self.mean_rate_rps = rate_rps
        self._rng = rng
        self._t = 0.0

    def next_time_s(self) -> float:
        self._t += float(self._rng.exponential(1.0 / self.mean_rate_rps))
        return self._t


class Gamma:
    """Gamma-distributed gaps: CV > 1 is burstier than Poisson, CV < 1 more regular, CV 0 constant."""

    def __init__(self, rate_rps: float, cv: float, rng: np.random.Generator) -> None:
        self.mean_rate_rps = rate_rps
        self.cv = cv
        self._rng = rng
        self._t = 0.0

    def next_time_s(self) -> float:
        self._t += gamma_gap_s(self._rng, self.mean_rate_rps, self.cv)
        return self._t


class OnOff:
    """Bursts of traffic separated by idle periods.

    A gamma process (rate `on_rate_rps`, CV `on_cv`) runs on "on" time only;
    on and off period lengths are gamma with means `on_s`/`off_s` and CVs
    `phase_cv`/`off_cv` (`off_cv` defaults to `phase_cv`). The run starts at
    the beginning of a burst. Mean rate = on_rate_rps * on_s / (on_s + off_s).
    """

    def __init__(self, on_rate_rps: float, on_cv: float, on_s: float, off_s: float, phase_cv: float,
                 rng: np.random.Generator, off_cv: float | None = None) -> None:
        self.on_rate_rps, self.on_cv, self.on_s, self.off_s, self.phase_cv = on_rate_rps, on_cv, on_s, off_s, phase_cv
        self.off_cv = phase_cv if off_cv is None else off_cv
        self._rng = rng
        self._t = 0.0
        self._on_end = self._phase(on_s, phase_cv)

    @property
    def mean_rate_rps(self) -> float:
        return self.on_rate_rps * self.on_s / (self.on_s + self.off_s)

    def _phase(self, mean_s: float, cv: float) -> float:
        return gamma_gap_s(self._rng, 1.0 / mean_s, cv) if mean_s > 0 else 0.0

    def next_time_s(self) -> float:
        t = self._t + gamma_gap_s(self._rng, self.on_rate_rps, self.on_cv)
        while t > self._on_end:  # the burst ended first: carry the rest of the gap into the next burst
            start = self._on_end + self._phase(self.off_s, self.off_cv)
            t = start + (t - self._on_end)
            self._on_end = start + self._phase(self.on_s, self.phase_cv)
        self._t = t
        return t


class Batched:
    """Groups of simultaneous requests, one group every period (gamma, CV `period_cv`; 0: regular).

    A group holds 1 + a stochastically rounded gamma draw (mean `batch_size` - 1, so groups average
    `batch_size` exactly, with CV `size_cv` of the group size). The first group comes at a uniform random
    point of the first period, so a window of any length holds rate x window requests on average.
    """

    def __init__(self, batch_size: float, period_s: float, size_cv: float, period_cv: float,
                 rng: np.random.Generator) -> None:
        assert batch_size >= 1 and period_s > 0, (batch_size, period_s)
        self.batch_size, self.period_s, self.size_cv, self.period_cv = batch_size, period_s, size_cv, period_cv
        self._rng = rng
        self._t = float(rng.uniform(0.0, 1.0)) * gamma_gap_s(rng, 1.0 / period_s, period_cv)
        self._left = self._size()

    @property
    def mean_rate_rps(self) -> float:
        return self.batch_size / self.period_s

    def _size(self) -> int:
        extra = self.batch_size - 1.0
        if extra > 0 and self.size_cv > 0:  # the CV is of the whole size: scale it to the part above 1
            extra = gamma_gap_s(self._rng, 1.0 / extra, self.size_cv * self.batch_size / extra)
        whole = int(extra)
        return 1 + whole + int(self._rng.random() < extra - whole)

    def next_time_s(self) -> float:
        if self._left == 0:
            self._t += gamma_gap_s(self._rng, 1.0 / self.period_s, self.period_cv)
            self._left = self._size()
        self._left -= 1
        return self._t


class Profile:
    """Arrivals that follow a piecewise-constant rate curve, repeated after its span.

    A gamma renewal process with unit rate and gap CV `cv` runs in "operational
    time" u = Lambda(t), the expected number of requests by t; each arrival is
    mapped back to wall time through the curve (the time-rescaling theorem), so
    the rate follows `rates_rps` while the gaps keep CV `cv` with the curve
    divided out. Steps with rate 0 get no requests.
    """

    def __init__(self, step_s: float, rates_rps: tuple[float, ...], cv: float, rng: np.random.Generator) -> None:
        assert step_s > 0 and rates_rps and max(rates_rps) > 0, (step_s, rates_rps)
        self.step_s, self.cv = step_s, cv
        self._rates = np.asarray(rates_rps, dtype=np.float64)
        self._cum = np.concatenate([[0.0], np.cumsum(self._rates * step_s)])  # Lambda at each step boundary
        self._per_cycle = float(self._cum[-1])
        self._span_s = step_s * len(self._rates)
        self._rng = rng
        self._u = 0.0

    @property
    def mean_rate_rps(self) -> float:
        return self._per_cycle / self._span_s

    def next_time_s(self) -> float:
        self._u += gamma_gap_s(self._rng, 1.0, self.cv)
        cycle, u = divmod(self._u, self._per_cycle)
        i = int(np.searchsorted(self._cum, u, side="right")) - 1  # cum[i] <= u < cum[i+1]: a step with rate > 0
        i = min(i, len(self._rates) - 1)
        return cycle * self._span_s + i * self.step_s + (u - self._cum[i]) / self._rates[i]


class TraceReplay:
    """The trace's own arrival times, from `start_s` into the trace, sped up by `speed`.

    `row` is the trace row of the arrival last returned (its lengths and prefix blocks go with it).
    """

    def __init__(self, trace: Trace, speed: float = 1.0, start_s: float = 0.0) -> None:
        assert speed > 0 and start_s >= 0, (speed, start_s)
        self.trace, self.speed, self.start_s = trace, speed, start_s
        self.row = int(np.searchsorted(np.asarray(trace.t_s), start_s, side="left")) - 1

    @property
    def mean_rate_rps(self) -> float:
        return self.trace.rate_rps * self.speed

    def next_time_s(self) -> float | None:
        self.row += 1
        if self.row >= len(self.trace):
            return None
        return (self.trace.t_s[self.row] - self.start_s) / self.speed


class Offline:
    """Throughput mode: every request is there at t=0 and the engine takes them as fast as it can."""

    mean_rate_rps = None

    def next_time_s(self) -> float:
        return 0.0


class ClosedLoop:
    """`concurrency` users, each sending its next request a think time after its previous answer."""

    def __init__(self, concurrency: int, think_s: float, think_cv: float, rng: np.random.Generator) -> None:
        self.concurrency, self.think_s, self.think_cv = concurrency, think_s, think_cv
        self._rng = rng
        self._n = 0

    def next_think_s(self) -> float:
        """Think time before the next request; users' first requests are staggered over one think time."""
        self._n += 1
        if self.think_s == 0:
            return 0.0
        if self._n <= self.concurrency:
            return float(self._rng.uniform(0.0, self.think_s))
        return gamma_gap_s(self._rng, 1.0 / self.think_s, self.think_cv)
