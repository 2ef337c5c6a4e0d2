"""Like with like: the runs of one scenario grouped by the workload they actually ran; one group is sized.

A workload is the scenario plus the length settings it was resolved to (`length_scale`,
`max_input_tokens`, `max_output_tokens`: the run's `schedule.effective`, as `advisor compare` reads
it) plus the lengths it realised: a run whose mean input or output tokens per request differ by more
than REALISED_TOLERANCE from its group's first run (another tokenizer, an engine that stops at EOS
where another is held to the asked length) is a workload of its own. The sized workload is the one
closest to the scenario's own lengths (no length override), then the one with the most runs, then
the newest; every run left out is named with the setting that differs.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.saved.store import RunResult

LENGTH_KEYS = ("length_scale", "max_input_tokens", "max_output_tokens")
REALISED_TOLERANCE = 0.25  # relative difference of mean tokens per request that makes another workload


def settings(run: RunResult) -> tuple[tuple[str, object], ...]:
    """The scenario and its length settings as the run resolved them (its overrides where older runs lack them)."""
    eff = run.schedule.effective
    over = run.schedule.overrides
    vals = [("scenario", run.scenario_name)]
    for k in LENGTH_KEYS:
        v = getattr(eff if eff is not None else over, k)
        vals.append((k, None if v is None or (k == "length_scale" and float(v) == 1.0) else v))
    return tuple(vals)


def realised(run: RunResult) -> tuple[float, float] | None:
    s = run.summary
    if not s.n_ok:
        return None
    return float(s.n_in_total) / s.n_ok, float(s.n_out_total) / s.n_ok


def _close(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    if a is None or b is None:
        return True
    return all(abs(x - y) <= REALISED_TOLERANCE * max(abs(y), 1.0) for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class WorkloadGroup:
    settings: tuple[tuple[str, object], ...]
    realised: tuple[float, float] | None  # mean input / output tokens per request of its first run
    runs: tuple[RunResult, ...]

    @property
    def overrides(self) -> int:
        return sum(v is not None for k, v in self.settings if k != "scenario")

    def describe(self) -> str:
        parts = [f"{k} {v}" for k, v in self.settings if k != "scenario" and v is not None]
        lens = f"{self.realised[0]:,.0f} in / {self.realised[1]:,.0f} out tokens per request" if self.realised else ""
        return (f"scenario {dict(self.settings)['scenario']!r}"
                + (f" with {', '.join(parts)}" if parts else " at its own lengths") + (f" ({lens})" if lens else ""))


def group_workloads(runs: list[RunResult]) -> list[WorkloadGroup]:
    """Runs grouped by settings, then split where the realised lengths differ beyond the tolerance."""
    out: list[WorkloadGroup] = []
    for run in runs:
        key, lens = settings(run), realised(run)
        for i, g in enumerate(out):
            if g.settings == key and _close(lens, g.realised):
                out[i] = WorkloadGroup(g.settings, g.realised, (*g.runs, run))
                break
        else:
            out.append(WorkloadGroup(key, lens, (run,)))
    return out


def pick_workload(runs: list[RunResult]) -> tuple[list[RunResult], str | None, list[tuple[RunResult, str]]]:
    """The runs of the workload to size, a note naming it (None: only one workload), and each run left out with why."""
    groups = group_workloads(runs)
    if len(groups) <= 1:
        return runs, None, []
    chosen = min(groups, key=lambda g: (g.overrides, -len(g.runs), -max(_created(r) for r in g.runs)))
    left = [(r, f"it ran {g.describe()}, not the sized workload") for g in groups if g is not chosen for r in g.runs]
    note = (f"sized for one workload: {chosen.describe()}, {len(chosen.runs)} run(s); capacity and cost are never "
            f"pooled across workloads ({len(groups)} in these runs; pick another with --runs)")
    return list(chosen.runs), note, left


def _created(run: RunResult) -> float:
    import datetime as dt

    try:
        return dt.datetime.fromisoformat(str(run.created_utc).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
