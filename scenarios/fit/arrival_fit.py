"""The arrival process of a log: mean rate, gap CV, on/off bursts, and a rate profile over hours.

Choice, in order: a `profile` (piecewise rate curve) when the log spans at
least two hours and its rate varies beyond what its burstiness explains;
else `onoff` when idle gaps carry at least a fifth of the time; else
`gamma` with the log's gap CV. Every process keeps the log's exact mean
rate.

Idle gaps are the gaps longer than a threshold T, chosen as the smallest T
for which a gamma process fitted to the gaps up to T would be expected to
produce fewer than one gap over T in as many gaps: what the in-burst
traffic cannot explain is idleness. On/off parameters follow from the two
groups (idle length mean and CV, in-burst rate and CV), so the fitted
process has the log's first two gap moments and hence its gap CV.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenarios.errors import ScenarioError
from scenarios.fit.stats import CHUNK, gamma_tail, gap_sum_squares, largest_gaps

PROFILE_MIN_SPAN_S = 7200.0
PROFILE_MAX_STEPS = 288
PROFILE_MIN_STEPS = 8
PROFILE_REQUESTS_PER_STEP = 1000  # so a step's rate is known to a few percent
ONOFF_MIN_IDLE_SHARE = 0.2
ONOFF_MIN_IDLE_GAPS = 3
TOP_GAPS = 20_000


@dataclass(frozen=True)
class ArrivalFit:
    spec: dict[str, Any]  # the scenario's `arrival` block
    rate_rps: float
    gap_cv: float
    span_s: float
    idle_threshold_s: float | None
    idle_gaps: int
    idle_share: float  # of the log's span spent in idle gaps
    profile_variation: float | None  # relative std of the step rates, when a profile was considered
    profile_noise: float | None  # what burstiness alone would give
    why: str  # one line: why this process
    notes: list[str] = field(default_factory=list)


def sig(x: float, digits: int = 4) -> float:
    """x to `digits` significant digits, as the YAML writes it."""
    return float(f"{x:.{digits}g}")


def fit_arrivals(t: np.ndarray) -> ArrivalFit:
    """Fit the arrival process of sorted arrival times (seconds from the first request)."""
    n = t.size
    span = float(t[-1]) if n else 0.0
    if n < 2 or span <= 0:
        raise ScenarioError("every request in the logs has the same timestamp; a fit needs arrivals spread "
                            "over time (check the timestamp field and --time-unit)")
    rate = (n - 1) / span
    mean_gap = span / (n - 1)
    sumsq = gap_sum_squares(t)
    cv = math.sqrt(max(sumsq / (n - 1) - mean_gap ** 2, 0.0)) / mean_gap
    top = largest_gaps(t, min(n - 1, TOP_GAPS))
    threshold, idle = _idle_gaps(top, n - 1, span, sumsq)
    idle_share = float(idle.sum()) / span
    base = dict(rate_rps=rate, gap_cv=cv, span_s=span, idle_threshold_s=threshold, idle_gaps=int(idle.size),
                idle_share=idle_share)
    profile = _profile(t, rate, cv) if span >= PROFILE_MIN_SPAN_S else None
    if profile is not None and profile[0] is not None:
        spec, variation, noise, u_cv = profile
        return ArrivalFit(spec=spec, profile_variation=variation, profile_noise=noise,
                          why=f"the rate varies over the {span / 3600:.3g} h log (step rates vary by "
                              f"{variation:.0%}, burstiness alone would give {noise:.0%}): a rate profile of "
                              f"{len(spec['rates_rps'])} steps of {spec['step_s']:.4g} s, gap CV {u_cv:.3g} "
                              "with the curve divided out", **base)
    variation = profile[1] if profile else None
    noise = profile[2] if profile else None
    if idle.size >= ONOFF_MIN_IDLE_GAPS and idle_share >= ONOFF_MIN_IDLE_SHARE:
        assert threshold is not None
        spec = _onoff(n, span, sumsq, idle, rate, _burst_cv(t, threshold))
        return ArrivalFit(spec=spec, profile_variation=variation, profile_noise=noise,
                          why=f"on/off bursts: {idle.size} idle gaps over {threshold:.3g} s carry {idle_share:.0%} "
                              f"of the time; bursts at {spec['on_rate_rps']:.4g} req/s with gap CV "
                              f"{spec['on_cv']:.3g}", **base)
    spec = {"process": "gamma", "rate_rps": sig(rate), "cv": sig(cv, 3)}
    why = f"gamma gaps with the log's CV {cv:.3g}" + (" (close to Poisson)" if abs(cv - 1) < 0.15 else "")
    if idle.size:
        why += f"; no on/off bursts (idle gaps carry {idle_share:.1%} of the time)"
    return ArrivalFit(spec=spec, profile_variation=variation, profile_noise=noise, why=why, **base)


def _idle_gaps(top: np.ndarray, n_gaps: int, span: float, sumsq: float) -> tuple[float | None, np.ndarray]:
    """(threshold, idle gaps) from the largest gaps (descending) and the totals of all gaps.

    Candidate thresholds are the largest gaps, at most half of all gaps (idle gaps are the exception:
    a burst holds more than one request); the smallest candidate the in-burst process explains wins.
    """
    cand = np.unique(top[: max(1, min(top.size, n_gaps // 2))])  # ascending, distinct
    asc = top[::-1]
    above_sum = np.concatenate([[0.0], np.cumsum(top)])  # sum of the i largest gaps
    above_sq = np.concatenate([[0.0], np.cumsum(top * top)])
    for threshold in cand.tolist():
        n_above = top.size - int(np.searchsorted(asc, threshold, side="right"))  # gaps strictly above
        n_in = n_gaps - n_above
        mean_in = (span - above_sum[n_above]) / n_in
        var_in = (sumsq - above_sq[n_above]) / n_in - mean_in ** 2
        if mean_in <= 0 or var_in <= 0:
            continue
        cv_in = math.sqrt(var_in) / mean_in
        if n_in * gamma_tail(threshold, mean_in, cv_in) < 1.0:
            return threshold, top[:n_above].copy()
    return None, np.empty(0)


def _burst_cv(t: np.ndarray, threshold: float) -> float:
    """CV of the bursts' lengths (first to last request between two idle gaps)."""
    cuts = [np.flatnonzero(np.diff(t[i: i + CHUNK + 1]) > threshold) + i for i in range(0, t.size - 1, CHUNK)]
    idle_at = np.concatenate(cuts)
    starts = np.concatenate([[0], idle_at + 1])
    ends = np.concatenate([idle_at, [t.size - 1]])
    lengths = t[ends] - t[starts]
    return float(lengths.std() / lengths.mean()) if lengths.mean() > 0 else 0.3


def _onoff(n: int, span: float, sumsq: float, idle: np.ndarray, rate: float, burst_cv: float) -> dict[str, Any]:
    n_in = n - 1 - idle.size
    on_time = span - float(idle.sum())
    mean_in = on_time / n_in
    on_cv = math.sqrt(max((sumsq - float(np.dot(idle, idle))) / n_in - mean_in ** 2, 0.0)) / mean_in
    off_s = float(idle.mean())
    on_s = on_time / (idle.size + 1)
    off_cv = float(idle.std() / off_s) if idle.size >= 2 else 0.3
    on_rate = rate * (on_s + off_s) / on_s  # the log's exact mean rate
    return {"process": "onoff", "on_rate_rps": sig(on_rate), "on_cv": sig(on_cv, 3), "on_s": sig(on_s),
            "off_s": sig(off_s), "phase_cv": sig(min(burst_cv, 10.0), 3), "off_cv": sig(min(off_cv, 10.0), 3)}


def _profile(t: np.ndarray, rate: float, cv: float) -> tuple[dict[str, Any] | None, float, float, float] | None:
    """(spec or None when the curve is flat, step-rate variation, expected noise, gap CV with the curve out)."""
    span = float(t[-1])
    n_steps = min(PROFILE_MAX_STEPS, t.size // PROFILE_REQUESTS_PER_STEP, int(span // 60))
    if n_steps < PROFILE_MIN_STEPS:
        return None
    step = span / n_steps
    counts = np.zeros(n_steps, dtype=np.int64)
    for i in range(0, t.size, CHUNK):
        idx = np.minimum((t[i: i + CHUNK] / step).astype(np.int64), n_steps - 1)
        counts += np.bincount(idx, minlength=n_steps)
    rates = counts / step
    variation = float(rates.std() / rates.mean())
    # gaps in "operational time": Lambda(t) interpolates the cumulative counts at the step edges
    edges = np.arange(n_steps + 1) * step
    cum = np.concatenate([[0.0], np.cumsum(counts)]).astype(np.float64)
    s1 = s2 = 0.0
    for i in range(0, t.size - 1, CHUNK):
        u = np.diff(np.interp(t[i: i + CHUNK + 1], edges, cum))
        s1 += float(u.sum())
        s2 += float(np.dot(u, u))
    m = s1 / (t.size - 1)
    u_cv = math.sqrt(max(s2 / (t.size - 1) - m * m, 0.0)) / m
    noise = min(u_cv, cv) / math.sqrt(counts.mean())
    if variation <= max(0.1, 3 * noise):
        return None, variation, noise, u_cv
    spec = {"process": "profile", "step_s": sig(step, 6), "rates_rps": [sig(r) for r in rates], "cv": sig(u_cv, 3)}
    return spec, variation, noise, u_cv
