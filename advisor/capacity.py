"""Capacity from a rate sweep: the highest request rate that still meets every SLO.

A sweep step passes when its verdict is VALID, every set SLO is met (`slo_met`), errors
stay under `MAX_ERROR_RATE` and the system kept up with the offered rate.
A step is past saturation when the verdict says SATURATED, errors pass
`MAX_ERROR_RATE`, or the achieved rate falls well short of the offered one. Capacity
is the highest passing rate below the first failing step (later passes above a failure
are treated as noise and reported, not trusted). Pure functions: no I/O.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

MAX_ERROR_RATE = 0.05
SATURATED_ACHIEVED_FRACTION = 0.8  # achieved < 80% of offered: the system no longer keeps up
CLEARLY_PAST_FRACTION = 0.5  # achieved < 50% of offered: stop the sweep now
MIN_REQUESTS_TO_JUDGE_RATE = 20  # below this, achieved vs offered is Poisson noise, not saturation


@dataclass(frozen=True)
class SweepPoint:
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

    @classmethod
    def from_run(cls, rate_rps: float, run: dict[str, Any]) -> SweepPoint:
        """From a saved run's dict (result.json schema)."""
        s, v = run["summary"], run.get("verdict") or {}
        return cls(rate_rps=float(rate_rps), run_id=str(run.get("run_id", "")), status=str(v.get("status", "INVALID")),
                   slo_met=dict(s.get("slo_met") or {}), error_rate=float(s.get("error_rate") or 0.0),
                   achieved_rps=float(s.get("requests_per_s") or 0.0), goodput_rps=float(s.get("goodput_rps") or 0.0),
                   slo_attainment=s.get("slo_attainment"), reasons=tuple(v.get("reasons") or ()),
                   n_requests=s.get("n_requests"))

    @property
    def slos_ok(self) -> bool:
        return all(v is not False for v in self.slo_met.values())

    def _short_of(self, fraction: float) -> bool:
        """Achieved fell below `fraction` of offered, with enough requests for that to mean something."""
        enough = self.n_requests is None or self.n_requests >= MIN_REQUESTS_TO_JUDGE_RATE
        return enough and self.achieved_rps < fraction * self.rate_rps

    @property
    def passes(self) -> bool:
        return (self.status == "VALID" and self.slos_ok and self.error_rate <= MAX_ERROR_RATE
                and not self._short_of(SATURATED_ACHIEVED_FRACTION))

    @property
    def saturated(self) -> bool:
        return (self.status == "SATURATED" or self.error_rate > MAX_ERROR_RATE
                or self._short_of(SATURATED_ACHIEVED_FRACTION))

    def failure(self) -> str:
        """Why this step fails, in words ('' if it passes)."""
        if self.passes:
            return ""
        why = [f"{k.upper()} SLO missed" for k, v in self.slo_met.items() if v is False]
        if self.error_rate > MAX_ERROR_RATE:
            why.append(f"error rate {self.error_rate:.1%}")
        if self._short_of(SATURATED_ACHIEVED_FRACTION):
            why.append(f"achieved {self.achieved_rps:.2f} of {self.rate_rps:.2f} req/s offered")
        if self.status != "VALID":
            why.append(f"verdict {self.status}" + (f" ({'; '.join(self.reasons)})" if self.reasons else ""))
        return ", ".join(why) or "failed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Capacity:
    capacity_rps: float | None  # None: even the lowest rate failed
    at: SweepPoint | None  # the step that defines it
    first_failure: SweepPoint | None  # the lowest failing rate, if any
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"capacity_rps": self.capacity_rps, "at": self.at.to_dict() if self.at else None,
                "first_failure": self.first_failure.to_dict() if self.first_failure else None, "reason": self.reason}


def capacity_from_sweep(points: list[SweepPoint] | tuple[SweepPoint, ...]) -> Capacity:
    """The highest passing rate below the first failing rate."""
    if not points:
        raise ValueError("empty sweep: run at least one rate")
    pts = sorted(points, key=lambda p: p.rate_rps)
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
                        f"even the lowest rate {first_fail.rate_rps:g} req/s fails: {first_fail.failure()}; "
                        "sweep lower rates, run longer steps if n is too small, or relax the SLOs")
    if first_fail is None:
        return Capacity(best.rate_rps, best, None,
                        f"every rate up to {best.rate_rps:g} req/s met the SLOs; capacity is at least that "
                        "(sweep higher rates to find the limit)")
    later = [p.rate_rps for p in pts if p.rate_rps > first_fail.rate_rps and p.passes]
    note = f"; passes again at {', '.join(f'{r:g}' for r in later)} req/s treated as noise" if later else ""
    return Capacity(best.rate_rps, best, first_fail,
                    f"meets every SLO at {best.rate_rps:g} req/s; fails at {first_fail.rate_rps:g} req/s "
                    f"({first_fail.failure()}){note}")


def stop_reason(points: list[SweepPoint] | tuple[SweepPoint, ...]) -> str | None:
    """Why a rising sweep should stop after these steps, or None to go on."""
    if not points:
        return None
    last = points[-1]
    if last._short_of(CLEARLY_PAST_FRACTION):
        return f"clearly past saturation at {last.rate_rps:g} req/s (achieved {last.achieved_rps:.2f} req/s)"
    if last.saturated and not last.passes:
        return f"saturated at {last.rate_rps:g} req/s: {last.failure()}"
    if len(points) >= 2 and not points[-1].passes and not points[-2].passes:
        return f"failed at two rates in a row ({points[-2].rate_rps:g}, {last.rate_rps:g} req/s)"
    return None
