"""Capacity from a sweep: the highest request rate (or number of users) that still meets every SLO.

A sweep step passes when its verdict is VALID (which already bounds errors, send
lag and saturation with the verdict's thresholds: `advisor.metrics.verdict`; the
verdict compares completions with the arrivals that really happened, so Poisson
noise in a short window is not mistaken for saturation) and every set SLO is met
(`slo_met`). A step is past saturation when the verdict says SATURATED or FAILED.
A sweep stops early when a step achieved less than half the offered rate. Capacity
is the highest passing step below the first failing one (later passes above a
failure are treated as noise and reported, not trusted). Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.metrics.verdict import MAX_ERROR_RATE
from advisor.saved.store import RunResult
from fileform import FileForm

CLEARLY_PAST_FRACTION = 0.5  # achieved < 50% of offered: stop the sweep now
MIN_REQUESTS_TO_JUDGE_RATE = 20  # below this, achieved vs offered is Poisson noise, not saturation


def _median(xs: list[float]) -> float | None:
    return sorted(xs)[len(xs) // 2] if xs else None


@dataclass(frozen=True)
class SweepPoint(FileForm):
    rate_rps: float  # offered
    run_id: str
    status: str  # verdict: VALID | INVALID | SATURATED
    slo_met: dict[str, bool | None]
    error_rate: float
    achieved_rps: float
    goodput_rps: float
    slo_attainment: float | None = None
    reasons: tuple[str, ...] = ()
    n_requests: int | None = None  # measured requests; None: unknown (trusted)
    concurrency: int | None = None  # closed-loop users of this step (a users sweep); rate_rps is then achieved
    run_ids: tuple[str, ...] = ()  # every run of the step (its repeats); empty: just run_id
    group_id: str | None = None  # the repeat group of the step's runs
    offered_rps: float | None = None  # the run's offered rate over its real window (None: older sweeps, = rate_rps)

    @property
    def load(self) -> float:
        """What the sweep varied: users for a users sweep, else the offered rate."""
        return float(self.concurrency) if self.concurrency is not None else self.rate_rps

    @classmethod
    def from_run(cls, rate_rps: float, run: RunResult, concurrency: int | None = None) -> SweepPoint:
        """From a saved run."""
        s, v = run.summary, run.verdict
        return cls(rate_rps=float(rate_rps), run_id=run.run_id, status=v.status,
                   slo_met=dict(s.slo_met), error_rate=float(s.error_rate or 0.0),
                   achieved_rps=float(s.requests_per_s or 0.0), goodput_rps=float(s.goodput_rps or 0.0),
                   slo_attainment=s.slo_attainment, reasons=v.reasons,
                   n_requests=s.n_requests, concurrency=concurrency, offered_rps=s.offered_rps)

    @classmethod
    def from_group(cls, rate_rps: float | None, runs: Sequence[RunResult], group_id: str,
                   concurrency: int | None = None) -> SweepPoint:
        """A step measured several times: it passes only if every repeat would (worst status, every SLO met)."""
        pts = [cls.from_run(rate_rps or 0.0, r, concurrency) for r in runs]
        order = ("FAILED", "SATURATED", "INVALID", "VALID")
        worst = min(pts, key=lambda p: order.index(p.status) if p.status in order else 0)
        slo_met: dict[str, bool | None] = {}
        for k in {k for p in pts for k in p.slo_met}:
            vals = [p.slo_met.get(k) for p in pts]
            slo_met[k] = False if False in vals else (True if vals and all(v is True for v in vals) else None)
        achieved = sorted(p.achieved_rps for p in pts)[len(pts) // 2]
        return cls(rate_rps=rate_rps if rate_rps is not None else achieved, run_id=pts[0].run_id,
                   status=worst.status, slo_met=slo_met, error_rate=max(p.error_rate for p in pts),
                   achieved_rps=achieved, goodput_rps=sorted(p.goodput_rps for p in pts)[len(pts) // 2],
                   reasons=worst.reasons, n_requests=sum(p.n_requests or 0 for p in pts),
                   concurrency=concurrency, run_ids=tuple(p.run_id for p in pts), group_id=group_id,
                   offered_rps=_median([p.offered_rps for p in pts if p.offered_rps is not None]))

    @property
    def slos_ok(self) -> bool:
        return all(v is not False for v in self.slo_met.values())

    def _short_of(self, fraction: float) -> bool:
        """Achieved fell below `fraction` of offered, with enough requests for that to mean something."""
        if self.concurrency is not None:
            return False  # a users sweep offers no rate: the engine sets the pace
        enough = self.n_requests is None or self.n_requests >= MIN_REQUESTS_TO_JUDGE_RATE
        # achieved against what the run really offered over the same window (docs/metrics.md)
        return enough and self.achieved_rps < fraction * (self.offered_rps or self.rate_rps)

    @property
    def passes(self) -> bool:
        return self.status == "VALID" and self.slos_ok and self.error_rate <= MAX_ERROR_RATE

    @property
    def saturated(self) -> bool:
        return self.status in ("SATURATED", "FAILED")

    def label(self) -> str:
        """The step's load in words: '4 users' or '2 req/s'."""
        return f"{self.concurrency} users" if self.concurrency is not None else f"{self.rate_rps:g} req/s"

    def failure(self) -> str:
        """Why this step fails, in words ('' if it passes)."""
        if self.passes:
            return ""
        why = [f"{k.upper()} SLO missed" for k, v in self.slo_met.items() if v is False]
        if self.error_rate > MAX_ERROR_RATE:
            why.append(f"error rate {self.error_rate:.1%}")
        if self.status != "VALID":
            why.append(f"verdict {self.status}" + (f" ({'; '.join(self.reasons)})" if self.reasons else ""))
        return ", ".join(why) or "failed"


@dataclass(frozen=True)
class Capacity:
    capacity_rps: float | None  # None: even the lowest rate failed
    at: SweepPoint | None  # the step that defines it
    first_failure: SweepPoint | None  # the lowest failing rate, if any
    reason: str

    @property
    def capacity_users(self) -> int | None:
        """For a users sweep: the most concurrent users that met every SLO."""
        return self.at.concurrency if self.at is not None else None

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (JSON built from properties, never read back)
        return {"capacity_rps": self.capacity_rps, "capacity_users": self.capacity_users,
                "at": self.at.to_dict() if self.at else None,
                "first_failure": self.first_failure.to_dict() if self.first_failure else None, "reason": self.reason}


def capacity_text(capacity_rps: float | None, capacity_users: int | None) -> str:
    """'2 req/s', '4 users (3.10 req/s)' or 'none': a capacity as the console and the report say it."""
    if capacity_users is not None:
        return f"{capacity_users} users ({capacity_rps or 0:.2f} req/s)"
    return "none" if capacity_rps is None else f"{capacity_rps:g} req/s"


def capacity_from_sweep(points: list[SweepPoint] | tuple[SweepPoint, ...]) -> Capacity:
    """The highest passing step below the first failing one."""
    if not points:
        raise ValueError("empty sweep: run at least one rate")
    pts = sorted(points, key=lambda p: p.load)
    best: SweepPoint | None = None
    first_fail: SweepPoint | None = None
    for p in pts:
        if not p.passes:
            first_fail = p
            break
        best = p
    if best is None:
        assert first_fail is not None
        return Capacity(None, None, first_fail,
                        f"even the lowest step, {first_fail.label()}, fails: {first_fail.failure()}; "
                        "sweep lower loads, run longer steps if n is too small, or relax the SLOs")
    # with no SLO set (a fitted scenario's default) a step passes on its verdict alone: say so, never "met the SLOs"
    judged = any(v is not None for p in pts for v in p.slo_met.values())
    unjudged = "" if judged else " (no SLO is set: latency was not judged, only a VALID verdict)"
    if first_fail is None:
        met = "met the SLOs" if judged else "stayed VALID"
        return Capacity(best.rate_rps, best, None,
                        f"every step up to {best.label()} {met}{unjudged}; capacity is at least that "
                        "(sweep higher loads to find the limit)")
    later = [p.label() for p in pts if p.load > first_fail.load and p.passes]
    note = f"; passes again at {', '.join(later)} treated as noise" if later else ""
    met = "meets every SLO" if judged else "stays VALID"
    return Capacity(best.rate_rps, best, first_fail,
                    f"{met} at {best.label()}{unjudged}; fails at {first_fail.label()} ({first_fail.failure()}){note}")


def stop_reason(points: list[SweepPoint] | tuple[SweepPoint, ...]) -> str | None:
    """Why a rising sweep should stop after these steps, or None to go on."""
    if not points:
        return None
    last = points[-1]
    if last._short_of(CLEARLY_PAST_FRACTION):
        return f"clearly past saturation at {last.label()} (achieved {last.achieved_rps:.2f} req/s)"
    if last.saturated:
        return f"{last.status.lower()} at {last.label()}: {last.failure()}"
    if len(points) >= 2 and not points[-1].passes and not points[-2].passes:
        return f"failed at two steps in a row ({points[-2].label()}, {last.label()})"
    return None
