"""`advisor report RUN_OR_SWEEP... -o report.html`: one self-contained HTML report of saved runs.

Arguments are run ids or folders and sweep ids or folders (a sweep brings all its
runs); with none, every run under --runs. The recommendation uses --constraints
when given, else the runs' own scenario SLOs with no load or budget.
"""

from __future__ import annotations

import math
from pathlib import Path

import click

from advisor_cli.options import RUNS


@click.command("report")
@click.argument("items", nargs=-1, metavar="RUN_OR_SWEEP...")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=Path("report.html"),
              show_default=True, help="HTML file to write.")
@click.option("--runs", "root", type=click.Path(file_okay=False, path_type=Path), default=RUNS,
              show_default=True, help="Folder of saved runs (run and sweep ids are looked up here).")
@click.option("--constraints", "constraints_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Constraints YAML for the recommendation (SLOs, peak load, budget, hardware; see `advisor recommend`).")
@click.option("--price-usd-hour", type=float, default=None,
              help="Price every run's hardware at this $/hour instead of the catalog's price.")
@click.option("--title", default="Inference engine benchmark report", show_default=True, help="Report title.")
@click.option("--usd-per-kwh", type=click.FloatRange(min=0), default=None,
              help="Electricity price for GPU energy cost per 1M tokens (default: the catalog's stated owned-TCO price).")
@click.option("--quality", "quality_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="`advisor verify --json` output: adds quality drift per engine and precision with one sample "
                   "completion each.")
@click.option("--embed-runs", "embed_root", type=click.Path(file_okay=False, path_type=Path), default=Path("runs-embed"),
              show_default=True, help="Folder of saved embed, rerank and rag runs: ranked in a section of their own "
                                      "(skipped when it does not exist).")
def report_command(items: tuple[str, ...], output: Path, root: Path, constraints_file: Path | None,
                   price_usd_hour: float | None, title: str, usd_per_kwh: float | None,
                   quality_file: Path | None, embed_root: Path) -> None:
    """Write a procurement report (HTML, opens offline, prints to PDF) for saved runs and sweeps."""
    from advisor.saved.atomic import unfinished_warning
    from advisor.saved.store import StoreError, item_folder, unfinished
    from reports.costs import price_runs
    from reports.html import write_report
    from reports.selection import (
        Selection,
        SelectionError,
        load_selection,
        make_recommendation,
        saved_runs,
        shown_runs,
    )

    for flag, value in (("--price-usd-hour", price_usd_hour), ("--usd-per-kwh", usd_per_kwh)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise click.BadParameter(f"must be a finite number >= 0, got {value}", param_hint=flag)
    for folder in unfinished({item_folder(i, root).parent for i in items} | {root}):
        _warn(unfinished_warning(folder))
    try:
        if items:
            selection = load_selection(items, root, warn=_warn)
        else:
            runs = saved_runs(root, _warn) if root.is_dir() else ()
            if not runs:
                raise click.UsageError(f"no saved runs under {root}; run `advisor bench` first, "
                                       "or name runs/sweeps (or pass --runs DIR)")
            selection = Selection(tuple(runs))
    except (SelectionError, StoreError) as e:
        raise click.UsageError(str(e)) from None
    constraints = None
    if constraints_file is not None:
        from advisor.catalog import load_catalog
        from advisor.recommend import Constraints, ConstraintsError

        try:
            constraints = Constraints.from_yaml(constraints_file)
        except ConstraintsError as e:
            raise click.UsageError(str(e)) from None
        try:
            constraints.check_vendors(load_catalog())
        except ConstraintsError as e:
            raise click.UsageError(f"{constraints_file}: vendors: {e}") from None
    quality = None
    if quality_file is not None:
        from reports.quality import QualityFileError, load_verify

        try:
            quality = load_verify(quality_file)
        except QualityFileError as e:
            raise click.UsageError(str(e)) from None
    rec = make_recommendation(selection.runs, constraints)
    chosen = shown_runs(selection.runs, rec)  # the runs `advisor recommend` ranks; the rest are listed with why
    if not chosen.included:
        raise click.UsageError(f"{constraints_file}: scenario {rec.constraints.get('scenario')!r} has no run here; the "
                               f"runs given are of {', '.join(chosen.held_scenarios)}: name one of them, or runs "
                               "of that scenario")
    prices = price_runs(chosen.included, usd_per_hour=price_usd_hour)
    path = write_report(output, selection.runs, prices=prices, recommendation=rec, sweeps=selection.sweeps,
                        title=title, usd_per_kwh=usd_per_kwh, quality=quality, retrieval=_retrieval(embed_root),
                        retrieval_drift=_retrieval_drift(embed_root))
    flagged = sum(1 for r in chosen.included if r.verdict.status != "VALID")
    note = f"; {flagged} not VALID, flagged in the report" if flagged else ""
    left = f"; {len(chosen.left_out)} left out, listed with why in the report" if chosen.left_out else ""
    click.echo(f"wrote {path} ({len(chosen.included)} runs{note}{left})")


def _retrieval(root: Path) -> list[object]:
    """The embed, rerank and rag rankings of `root` (`advisor.recommend.retrieval`); none when it holds no such run."""
    from advisor.recommend.retrieval import TASKS, NoRetrievalRuns, load_runs, rank

    out: list[object] = []
    for task in TASKS:
        try:
            out.extend(rank(load_runs(root, task), task))
        except NoRetrievalRuns:
            continue
    return out


def _retrieval_drift(root: Path) -> dict[str, object]:
    """The embedding and rerank drift saved by `advisor verify` under `root`, matched to the embed and rerank runs."""
    from advisor.recommend.retrieval import load_runs
    from reports.retrieval_drift import drift_context

    return drift_context(root, load_runs(root, "embed") + load_runs(root, "rerank"))


def _warn(line: str) -> None:
    click.echo(line, err=True)
