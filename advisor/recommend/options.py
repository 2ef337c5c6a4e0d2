"""Measured options: saved runs as repeat groups, each judged against the effective SLOs.

A repeat group (runs tagged by `advisor.repeats.group`; an untagged run is a group of one) is one option:
VALID only when every repeat is, its latencies and rate are medians over the repeats with their
order-statistic intervals, and each SLO is judged by the early-stopping rule over all the group's
requests pooled (n and the count over the limit add up; the observed percentile is the repeats'
median). An SLO that is not established is never counted as met.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from advisor.metrics.intervals import Interval, median_interval
from advisor.metrics.slo_evidence import RunSample, observed, sample_for, slo_checks
from advisor.metrics.support import SloCheck, check_slo
from advisor.repeats.group import repeat_tag
from advisor.saved.store import RunResult


def _achieved_rps(run: RunResult) -> float:
    """The rate a run completed (a capacity is what was achieved, never what was offered)."""
    return float(run.summary.requests_per_s or 0.0)


@dataclass(frozen=True)
class MeasuredOption:
    runs: tuple[RunResult, ...]
    group_id: str
    status: str  # VALID when every repeat is
    reasons: tuple[str, ...]  # the verdict reasons of the repeats that are not VALID
    checks: dict[str, SloCheck]  # per set SLO, pooled over the repeats
    rate: Interval  # achieved requests/s
    latency: dict[str, Interval | None]  # SLO-percentile TTFT/TPOT/E2E

    @property
    def valid(self) -> bool:
        return self.status == "VALID"

    @property
    def meets(self) -> bool:
        """VALID, and every set SLO established as met."""
        return self.valid and all(c.met for c in self.checks.values())

    @property
    def run_id(self) -> str:
        return self.runs[0].run_id

    @property
    def n(self) -> int:
        return len(self.runs)


def _pool(checks: Sequence[SloCheck]) -> SloCheck:
    first = checks[0]
    obs = [c.observed_ms for c in checks if c.observed_ms is not None]
    return check_slo(first.metric, first.percentile, first.limit_ms, sum(c.n for c in checks),
                     sum(c.n_over for c in checks), statistics.median(obs) if obs else None,
                     n_over_exact=all(c.n_over_exact for c in checks), n_failed=sum(c.n_failed for c in checks))


def judge(runs: Sequence[RunResult], slos: Mapping[str, float | None], percentile: float,
          samples: Mapping[str, RunSample] | None) -> MeasuredOption:
    """One option from the runs of one repeat group."""
    per_run = [slo_checks(r, slos, percentile, sample_for(r, samples)) for r in runs]
    checks = {k: _pool([c[k] for c in per_run]) for k in per_run[0]}
    statuses = [r.verdict.status for r in runs]
    status = next((s for s in ("FAILED", "SATURATED", "INVALID") if s in statuses), "VALID")
    reasons = tuple(x for r in runs if r.verdict.status != "VALID" for x in r.verdict.reasons[:1])
    latency = {}
    for k in ("ttft_ms", "tpot_ms", "e2e_ms"):
        vals = [v for r in runs if (v := observed(r.summary, k, percentile)) is not None]
        latency[k] = median_interval(vals) if vals else None
    tag = repeat_tag(runs[0])
    return MeasuredOption(tuple(runs), tag.group_id if tag else runs[0].run_id, status, reasons,
                          checks, median_interval([_achieved_rps(r) for r in runs]), latency)


def options(runs: Sequence[RunResult], slos: Mapping[str, float | None], percentile: float,
            samples: Mapping[str, RunSample] | None = None) -> list[MeasuredOption]:
    """The runs of one (engine, model, config, hardware) as options, one per repeat group."""
    groups: dict[str, list[RunResult]] = {}
    for r in runs:
        tag = repeat_tag(r)
        groups.setdefault(tag.group_id if tag else f"run:{r.run_id}", []).append(r)
    return [judge(g, slos, percentile, samples) for g in groups.values()]


def best_and_closest(opts: Sequence[MeasuredOption]) -> tuple[MeasuredOption | None, MeasuredOption]:
    """The highest-rate option that meets the SLOs (None if none does), and the lowest-rate option."""
    assert opts, "a candidate has at least one run"
    meeting = [o for o in opts if o.meets]
    best = max(meeting, key=lambda o: o.rate.value) if meeting else None
    closest = min(opts, key=lambda o: (not o.valid, o.rate.value))
    return best, closest
