"""Does a fitted arrival process reproduce its log? Draw it over several seeds and compare, statistic by statistic.

Each seed draws the process over the log's span (or, for a log of more than
MAX_CHECK_REQUESTS requests, a window holding that many; a rate profile is
then compressed into it, rates kept, as a run would). The statistics judged,
each with its tolerance: mean rate (10%, or three times the noise the log's
own gap CV gives over SEEDS draws of its length, whichever is wider), gap CV (20%), p99 gap (25%), mean
size of groups of simultaneous requests and the mean period between groups
(10% each), and every seed's request count against the log's rate x window
(within SPREAD_MIN, or three times what the log's own gap CV gives over that
many requests, whichever is wider). The median and p90 gap are shown, not
judged (in-burst gaps need not be gamma). `choose` picks the first candidate
that passes; a best candidate that still misses the rate, or the gap CV by more
than a factor of 2, is refused: that model would not be the log's traffic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from scenarios import spec as S
from scenarios.arrival_times import make_process
from scenarios.errors import ScenarioError
from scenarios.fit.batch_fit import SIMULTANEOUS_S, groups

SEEDS = 8
MAX_CHECK_REQUESTS = 50_000  # per seed
SPREAD_MIN = 0.10
CV_REFUSE_FACTOR = 2.0
TOLERANCES = {"rate (req/s)": 0.10, "gap CV": 0.20, "p99 gap (s)": 0.25, "mean group size": 0.10,
              "group period (s)": 0.10, "median gap (s)": None, "p90 gap (s)": None}


@dataclass(frozen=True)
class CheckRow:
    stat: str
    log: float
    mean: float  # over the seeds
    low: float
    high: float
    tolerance: float | None  # relative; None: shown, not judged

    @property
    def rel_diff(self) -> float:
        if abs(self.log) <= SIMULTANEOUS_S and abs(self.mean) <= SIMULTANEOUS_S:  # both "no gap at all"
            return 0.0
        return (self.mean - self.log) / max(abs(self.log), SIMULTANEOUS_S)

    @property
    def ok(self) -> bool:
        return self.tolerance is None or abs(self.rel_diff) <= self.tolerance


@dataclass(frozen=True)
class ArrivalCheck:
    process: str
    rows: tuple[CheckRow, ...]
    requests: tuple[int, ...]  # drawn per seed, seeds 0..SEEDS-1
    expected: float  # the log's rate x window
    window_s: float
    spread_bound: float  # each seed's count within this relative distance of `expected`

    @property
    def spread(self) -> float:
        return max(abs(n - self.expected) for n in self.requests) / self.expected

    def misses(self) -> list[str]:
        out = [f"{r.stat} {_f(r.mean)} against the log's {_f(r.log)} ({r.rel_diff:+.0%}, tolerance "
               f"±{r.tolerance:.0%})" for r in self.rows if not r.ok]
        if self.spread > self.spread_bound:
            out.append(f"requests per seed {min(self.requests):,}-{max(self.requests):,} over {self.window_s:.4g} s "
                       f"against the log's {self.expected:,.0f} (±{self.spread:.0%}, tolerance "
                       f"±{self.spread_bound:.0%})")
        return out

    def gross(self) -> bool:
        """Misses the rate, or the gap CV by more than CV_REFUSE_FACTOR: a different kind of traffic."""
        rate, cv = self.row("rate (req/s)"), self.row("gap CV")
        ratio = cv.mean / cv.log if cv.log > 0 else 1.0
        return not rate.ok or not 1 / CV_REFUSE_FACTOR <= ratio <= CV_REFUSE_FACTOR

    def row(self, stat: str) -> CheckRow:
        return next(r for r in self.rows if r.stat == stat)

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (JSON built from properties, never read back)
        return {"process": self.process, "seeds": len(self.requests), "window_s": self.window_s,
                "requests_per_seed": list(self.requests), "expected_requests": self.expected,
                "spread": self.spread, "spread_bound": self.spread_bound, "misses": self.misses(),
                "rows": [{"stat": r.stat, "log": r.log, "mean": r.mean, "low": r.low, "high": r.high,
                          "rel_diff": r.rel_diff, "tolerance": r.tolerance, "ok": r.ok} for r in self.rows]}


def _f(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def arrival_stats(t: np.ndarray, window_s: float) -> dict[str, float]:
    """The judged statistics of sorted arrival times over a window of `window_s`."""
    gaps = np.diff(t)
    sizes, between = groups(t)
    p50, p90, p99 = np.quantile(gaps, [0.5, 0.9, 0.99]) if gaps.size else (0.0, 0.0, 0.0)
    return {"rate (req/s)": t.size / window_s, "gap CV": float(gaps.std() / gaps.mean()) if gaps.mean() > 0 else 0.0,
            "median gap (s)": float(p50), "p90 gap (s)": float(p90), "p99 gap (s)": float(p99),
            "mean group size": float(sizes.mean()),
            "group period (s)": float(between.mean()) if between.size else window_s}


def _draw(spec: S.ArrivalSpec, seed: int, window_s: float) -> np.ndarray:
    proc = make_process(spec, np.random.default_rng([seed, 0]))
    out: list[float] = []
    limit = 4 * MAX_CHECK_REQUESTS  # a process far off its rate stops here; the check then reports it
    while len(out) < limit:
        t = proc.next_time_s()
        if t is None or t >= window_s:
            break
        out.append(t)
    return np.asarray(out)


def check_arrivals(log_t: np.ndarray, arrival: dict[str, Any], seeds: int = SEEDS) -> ArrivalCheck:
    """Draw `arrival` (a scenario's arrival block) over `seeds` seeds and compare with sorted log times."""
    spec = TypeAdapter(S.ArrivalSpec).validate_python(arrival)
    span = float(log_t[-1] - log_t[0])
    rate = (log_t.size - 1) / span
    window = min(span, MAX_CHECK_REQUESTS / rate)
    if isinstance(spec, S.ProfileArrival) and window < spec.span_s:
        spec = spec.model_copy(update={"step_s": spec.step_s * window / spec.span_s})
    log_part = log_t[log_t < log_t[0] + window]
    log_stats = arrival_stats(log_part, window)
    log_stats["rate (req/s)"] = rate
    drawn = [_draw(spec, s, window) for s in range(seeds)]
    per_seed = [arrival_stats(d, window) for d in drawn if d.size >= 2]
    expected = rate * window
    noise = 3 * log_stats["gap CV"] / math.sqrt(expected)  # three sigmas of a renewal count with the log's CV
    rows = []
    for stat, tol in TOLERANCES.items():
        vals = [p[stat] for p in per_seed] or [0.0]
        if stat == "rate (req/s)":
            tol = max(tol or 0.0, noise / math.sqrt(seeds))
        rows.append(CheckRow(stat, log_stats[stat], float(np.mean(vals)), min(vals), max(vals), tol))
    bound = max(SPREAD_MIN, noise)
    return ArrivalCheck(str(arrival["process"]), tuple(rows), tuple(int(d.size) for d in drawn), expected, window,
                        bound)


def choose(log_t: np.ndarray, candidates: list[dict[str, Any]]) -> tuple[int, ArrivalCheck, list[ArrivalCheck]]:
    """(index of the chosen candidate, its check, every check): the first that passes, else the closest.

    Raises ScenarioError, with the comparison, when even the closest is a different kind of traffic.
    """
    checks = [check_arrivals(log_t, c) for c in candidates]
    best = next((i for i, c in enumerate(checks) if not c.misses()),
                min(range(len(checks)), key=lambda i: (checks[i].gross(), len(checks[i].misses()))))
    if checks[best].gross():
        tried = "; ".join(f"{c.process}: " + ", ".join(c.misses()) for c in checks)
        raise ScenarioError(f"no arrival process the scenario schema has reproduces this log over {SEEDS} seeds "
                            f"({tried}); nothing was written. Fit a stretch of the log with steadier traffic, or "
                            "replay the log itself (workload.trace with arrival process: trace)")
    return best, checks[best], checks
