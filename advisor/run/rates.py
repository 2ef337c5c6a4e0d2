"""The rate a saved run was driven at, read one way by every reader (console, report, recommender, sweep).

The offered rate is computed once, by `advisor.run.window.compute_offered_rps` when the run ends, and saved once,
as result.json's `summary.offered_rps` (docs/metrics.md, "The real window"): the measured requests
scheduled inside the real window, per second of it; None for closed loop and offline. Older files may also
hold a copy as `schedule.offered_rps` (the same number, dropped on load) and the arrival process's mean rate
as `schedule.effective.offered_rps` (another quantity, the target, not read).

Not the offered rate: the rate asked with `--rate` (`schedule.overrides`), the arrival process's mean
(`Settings.target_rps`), nor the achieved `requests_per_s`. A reader that wants "the load this run was at"
uses `load_rps`, which falls back to the achieved rate only where nothing was offered (closed loop, offline).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.saved.store import RunResult


def offered_rps(run: RunResult) -> float | None:
    """The run's offered rate in requests per second (None: closed loop or offline)."""
    v = run.summary.offered_rps
    return None if v is None else float(v)


def load_rps(run: RunResult) -> float | None:
    """The load a run was driven at: its offered rate, else (nothing offered) its achieved request rate."""
    v = offered_rps(run)
    if v:
        return v
    achieved = run.summary.requests_per_s
    return None if achieved is None else float(achieved)
