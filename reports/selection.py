"""What a report or the dashboard shows: saved runs (from run and sweep folders) and their recommendation.

`load_selection` resolves each argument of `advisor report RUN_OR_SWEEP...` to runs;
`make_recommendation` calls `advisor.recommend` on exactly those runs, and `shown_runs`
picks the ones the report draws and prices with the recommender's own selection
(`advisor.recommend.run_selection`), so the report and `advisor recommend` rest on the
same runs and name the same runs left out. None computes a metric: the runs carry their
summaries and the recommender its ranking.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.saved.store import (
    RECORDS_FILE,
    RESULT_FILE,
    RunResult,
    StoreError,
    check_records,
    item_folder,
    list_runs,
    load_run,
    skip_warning,
)

if TYPE_CHECKING:
    from advisor.recommend.run_selection import RunSelection

SWEEP_FILE = "sweep.json"


class SelectionError(ValueError):
    """An argument that names no run or sweep; the message says where it looked."""


@dataclass(frozen=True)
class Selection:
    runs: tuple[RunResult, ...]
    sweeps: tuple[dict[str, Any], ...] = ()  # sweep.json dicts (capacity, stop reason), as saved


def load_selection(items: Sequence[str | Path], root: Path = Path("runs"),
                   warn: Callable[[str], None] | None = None) -> Selection:
    """Runs named by id or folder, and every run of each sweep named by id or folder (duplicates dropped).

    A run whose result.json cannot be read is skipped with one `warn(line)` naming it and why (without `warn`,
    it is an error); when that leaves nothing, the error says why each named run cannot be reported. A run
    whose per-request records are missing or damaged is reported from result.json alone, with a warning.
    """
    runs: dict[str, RunResult] = {}
    sweeps: list[dict[str, Any]] = []
    skipped: list[str] = []

    def add(run_or_id: str | Path, under: Path | None) -> None:
        try:
            run = load_run(run_or_id, root=under) if under is not None else load_run(run_or_id)
        except StoreError as e:
            if warn is None:
                raise
            skipped.append(f"run {Path(str(run_or_id)).name}: {e}")
            return
        runs.setdefault(run.run_id, run)

    for item in items:
        folder = item_folder(item, root)
        if (folder / SWEEP_FILE).is_file():
            sweep = _load_sweep(folder)
            sweeps.append(sweep)
            for step in sweep.get("steps") or []:
                for run_id in step.get("run_ids") or [step["run_id"]]:  # every repeat of the step
                    add(run_id, folder.parent)
        elif (folder / RESULT_FILE).is_file():
            add(folder, None)
        else:
            raise SelectionError(f"{item}: no run or sweep there (looked for {folder / RESULT_FILE} and "
                                 f"{folder / SWEEP_FILE}); give a run id or folder from `ls {root}`")
    if not runs:
        raise SelectionError(f"nothing to report: {'; '.join(skipped)}" if skipped
                             else "no runs selected; name at least one run or sweep")
    for line in skipped:
        assert warn is not None
        warn(f"warning: skipped {line}")
    return Selection(with_records_noted(runs.values(), warn), tuple(sweeps))


def saved_runs(root: Path, warn: Callable[[str], None]) -> tuple[RunResult, ...]:
    """Every run under `root` whose result.json reads (a damaged one skipped with one warning line)."""
    skipped: list[tuple[Path, str]] = []
    runs = list_runs(root, skipped)
    for folder, why in skipped:
        warn(skip_warning(folder, why))
    return with_records_noted(runs, warn)


def with_records_noted(runs: Iterable[RunResult], warn: Callable[[str], None] | None) -> tuple[RunResult, ...]:
    """The runs, one warning for each whose per-request records cannot be read: the report is drawn from
    result.json (its summary, verdict, SLOs) and only the latency CDF and exact SLO counts need the records."""
    out = tuple(runs)
    for run in out:
        folder = run.path or Path(run.run_id)
        try:
            check_records(folder)
        except StoreError:
            what = "is missing" if not (folder / RECORDS_FILE).exists() else "cannot be read"
            if warn is not None:
                warn(f"warning: run {run.run_id}: its {RECORDS_FILE} {what}; reported from result.json alone "
                     "(no latency CDF; SLO checks use its saved percentiles)")
    return out


def _load_sweep(folder: Path) -> dict[str, Any]:
    from advisor.sweep.run import SweepError, load_sweep

    try:
        return load_sweep(folder).to_dict()
    except (SweepError, KeyError, TypeError) as e:
        raise SelectionError(f"{folder / SWEEP_FILE}: cannot read the sweep ({e}); re-run `advisor sweep`") from None


@dataclass(frozen=True)
class RecommendationResult:
    """The recommender's output as a dict, or why there is none (never both)."""

    recommendation: dict[str, Any] | None = None
    reason: str = ""
    constraints: dict[str, Any] = field(default_factory=dict)


def make_recommendation(runs: Sequence[RunResult], constraints: Any | None = None,
                        catalog: Any | None = None) -> RecommendationResult:
    """Rank the given runs with `advisor.recommend` under `constraints` (a Constraints, a dict, or None)."""
    try:
        from advisor.catalog import load_catalog
        from advisor.hardware.detect import detect
        from advisor.recommend import Constraints, ConstraintsError, recommend
        from advisor.recommend.constraints import build
    except ImportError as e:  # the recommender is part of the package; a broken install says so
        return RecommendationResult(None, f"the recommender could not be imported ({e})")
    try:
        if constraints is None:
            constraints = Constraints()
        elif isinstance(constraints, dict):
            constraints = build(constraints, "constraints")
        catalog = catalog if catalog is not None else load_catalog()
        from advisor.metrics.slo_evidence import load_samples

        rec = recommend(list(runs), constraints, catalog, detected=detect(catalog, measure=False),
                        samples=load_samples(runs))
    except (ConstraintsError, StoreError, ValueError) as e:
        return RecommendationResult(None, str(e), _dump(constraints))
    return RecommendationResult(rec.to_dict(), "", _dump(constraints))


def shown_runs(runs: Sequence[RunResult], rec: RecommendationResult) -> RunSelection:
    """The runs the report shows and each run it leaves out with why: the recommender's selection for the
    recommendation's scenario (every scenario when none is named)."""
    from advisor.recommend.run_selection import select_runs

    return select_runs(runs, (rec.constraints or {}).get("scenario"))


def _dump(constraints: Any) -> dict[str, Any]:
    dump = getattr(constraints, "model_dump", None)
    return dump(mode="json") if dump else dict(constraints or {})
