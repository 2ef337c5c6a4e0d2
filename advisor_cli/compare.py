"""`advisor compare A B`: which headline figures differ beyond their intervals, and a CI gate on regressions.

A and B are each a run (id or folder) or a repeat group (its id, from `--repeats`). Each figure is
the group's median with its order-statistic interval (a single run is one value with no interval).
A figure *differs* when the two intervals do not overlap; it is a *regression* when it differs, B is
worse than A, and B is worse by more than `--max-regression` percent. With `--max-regression` set,
the command exits 1 on any regression, so a team can gate an engine or configuration upgrade in its
own CI; without it, it only reports. Single runs carry no interval: any difference "differs", so
gate on repeat groups where run-to-run noise matters. When A and B ran different workloads (scenario or
its resolved settings: rate, users, lengths, duration, seed) a note says which, since the figures then
follow the load as much as the engine. When A and B are different systems (model, engine, precision or
hardware: `advisor.hardware.systems`) the differences are listed first, and a regression gate between them is refused
(exit 2) unless `--allow-different`, which labels the output "different systems".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel

from advisor.hardware.systems import system_differences
from advisor.metrics.intervals import Interval
from advisor.metrics.registry import not_recorded
from advisor.repeats.group import FIGURE_BY_KEY, FIGURES, RepeatGroup, find_group
from advisor.run.rates import offered_rps
from advisor.saved.store import RESULT_FILE, RunResult, StoreError, item_folder, list_runs, load_run
from advisor_cli.options import RUNS

COST_KEY = "usd_per_1m_output"


class RegressionFound(click.ClickException):
    """B is worse than A beyond both intervals and past the threshold: exit 1 (the CI gate)."""

    exit_code = 1


def resolve(item: str, root: Path, runs: list[RunResult] | None = None) -> RepeatGroup:
    """A run (by folder or id) as a group of one, or a repeat group by its id."""
    folder = item_folder(item, root)
    if (folder / RESULT_FILE).is_file():
        run = load_run(folder)
        return RepeatGroup(run.run_id, (run,), 1)
    group = find_group(runs if runs is not None else (list_runs(root) if root.is_dir() else []), item)
    from advisor.sweep.run import SWEEP_FILE  # the sweep module loads the bench: only when a lookup failed

    if group is None and (folder / SWEEP_FILE).is_file():
        raise click.UsageError(f"{item} is a sweep: compare two of its steps' runs or repeat groups (`advisor show "
                               f"{item}` lists them), or read the whole sweep with `advisor report {item}`")
    if group is None:
        raise click.UsageError(f"{item}: no run or repeat group of that id under {root} (looked for "
                               f"{folder / RESULT_FILE} and for runs tagged with that group id); "
                               f"give a run id from `ls {root}` or a repeat group id")
    return group


def _price_usd_hour(group: RepeatGroup, price_usd_hour: float | None) -> float | None:
    if price_usd_hour is not None:
        return price_usd_hour
    from advisor.catalog import load_catalog
    from advisor.hardware.detect import match_hardware

    catalog = load_catalog()
    hw = match_hardware((group.runs[0].manifest or {}).get("hardware") or {}, catalog)
    price = catalog.price(hw.id, "cloud_on_demand") if hw else None
    return price.usd_per_hour if price else None


def figures(group: RepeatGroup, price_usd_hour: float | None) -> dict[str, Interval]:
    """Every headline figure of the group, plus $/1M output tokens when its hardware has a price."""
    out = group.figures()
    tps, price = out.get("output_tokens_per_s"), _price_usd_hour(group, price_usd_hour)
    if tps is not None and price is not None and tps.low > 0:
        out[COST_KEY] = tps.map(lambda v: price / (v * 3600.0) * 1e6, decreasing=True)
    return out


@dataclass(frozen=True)
class Difference:
    key: str
    label: str
    unit: str
    better: str
    a: Interval
    b: Interval
    change_pct: float | None  # (B - A) / A x 100
    differs: bool  # the intervals do not overlap
    worse: bool  # B is worse than A (in the figure's own direction)
    regression: bool  # differs, worse, and past the threshold

    def verdict(self) -> str:
        if self.regression:
            return "REGRESSION"
        if not self.differs:
            return "no difference established"
        return "B worse" if self.worse else "B better" if self.a.value != self.b.value else "same"

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (JSON built from properties, never read back)
        return {"key": self.key, "label": self.label, "unit": self.unit, "better": self.better,
                "a": self.a.to_dict(), "b": self.b.to_dict(), "change_pct": self.change_pct,
                "differs": self.differs, "worse": self.worse, "regression": self.regression, "verdict": self.verdict()}


def compare(fa: dict[str, Interval], fb: dict[str, Interval], max_regression_pct: float | None,
            keys: tuple[str, ...] | None = None) -> list[Difference]:
    """One Difference per figure both sides have."""
    meta = {f.key: (f.label, f.unit, f.better) for f in FIGURES}
    meta[COST_KEY] = ("$/1M output tokens", "$", "lower")
    out = []
    for key, (label, unit, better) in meta.items():
        if (keys and key not in keys) or key not in fa or key not in fb:
            continue
        a, b = fa[key], fb[key]
        change = (b.value - a.value) / abs(a.value) * 100.0 if a.value else None
        worse = b.value > a.value if better == "lower" else b.value < a.value
        differs = not a.overlaps(b)
        past = max_regression_pct is not None and change is not None and abs(change) > max_regression_pct
        change = change if change is not None and math.isfinite(change) else None  # JSON has no Infinity: null
        out.append(Difference(key, label, unit, better, a, b, change, differs, worse, differs and worse and past))
    return out


# What makes two runs' offered work the same: the scenario and the settings it was resolved to.
WORKLOAD_KEYS = ("mode", "arrival", "sessions", "duration_s", "warmup_s", "seed", "max_requests", "length_scale",
                 "max_input_tokens", "max_output_tokens")


def _workload(run: RunResult) -> dict[str, Any]:
    eff = run.schedule.effective
    out: dict[str, Any] = {"scenario": run.scenario_name, "concurrency": run.schedule.concurrency}
    for k in WORKLOAD_KEYS:
        v = getattr(eff, k) if eff is not None else None
        if isinstance(v, BaseModel):  # the arrival or sessions block, compared key by key
            out.update({f"{k}.{kk}": vv for kk, vv in v.model_dump(mode="json", exclude_none=k == "sessions").items()})
        else:
            out[k] = v
    if eff is None:  # a run saved before settings were recorded: its offered rate is what is left to compare
        out["offered_rps"] = offered_rps(run)
    return out


def workload_differences(ga: RepeatGroup, gb: RepeatGroup) -> list[str]:
    """'arrival.rate_rps 2.5 vs 3': where A's and B's offered work differ (empty: the same scenario and settings)."""
    wa, wb = _workload(ga.runs[0]), _workload(gb.runs[0])
    return [f"{k} {wa.get(k)} vs {wb.get(k)}" for k in dict.fromkeys([*wa, *wb]) if wa.get(k) != wb.get(k)]


def _side(group: RepeatGroup) -> dict[str, Any]:
    return {"id": group.group_id, "kind": "repeat group" if group.is_repeated else "run", "n": group.n,
            "status": group.status, "run_ids": [r.run_id for r in group.runs]}


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Refuse NaN and infinity, which click's FloatRange lets through (a NaN threshold never trips the gate)."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"must be a finite number, got {value}", ctx, param)
    return value


@click.command("compare")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@click.option("--runs", "root", type=click.Path(file_okay=False, path_type=Path), default=RUNS,
              show_default=True, help="Folder of saved runs (ids and repeat groups are looked up here).")
@click.option("--max-regression", "max_regression_pct", type=click.FloatRange(min=0), default=None, metavar="PCT",
              callback=_finite,
              help="Exit 1 when a figure of B is worse than A's beyond both intervals and by more than PCT percent.")
@click.option("--figures", "figure_keys", default=None, metavar="KEY,...",
              help=f"Only these figures ({', '.join([*FIGURE_BY_KEY, COST_KEY])}).")
@click.option("--price-usd-hour", type=click.FloatRange(min=0, min_open=True), default=None, callback=_finite,
              help="Price both sides' hardware at this $/hour for the $/1M figure (default: the catalog's).")
@click.option("--allow-different", is_flag=True,
              help="Compare (and gate) A and B even when they are different systems (model, engine, precision or "
                   "hardware); the output says 'different systems'.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
def compare_command(a: str, b: str, root: Path, max_regression_pct: float | None, figure_keys: str | None,
                    price_usd_hour: float | None, allow_different: bool, as_json: bool) -> None:
    """Compare two runs or repeat groups: which figures differ beyond their intervals (A is the baseline)."""
    keys = tuple(k.strip() for k in figure_keys.split(",") if k.strip()) if figure_keys else None
    unknown = [k for k in keys or () if k not in FIGURE_BY_KEY and k != COST_KEY]
    if unknown:
        raise click.UsageError(f"unknown figure {', '.join(unknown)}; known: {', '.join([*FIGURE_BY_KEY, COST_KEY])}")
    runs = list_runs(root) if root.is_dir() else []
    try:
        ga, gb = resolve(a, root, runs), resolve(b, root, runs)
    except StoreError as e:
        raise click.UsageError(str(e)) from None
    systems = system_differences(ga.runs[0], gb.runs[0])
    if systems and max_regression_pct is not None and not allow_different:
        raise click.UsageError(f"A and B are different systems ({'; '.join(systems)}): a regression between them "
                               "compares machines, not a change; compare two runs of one system, or pass "
                               "--allow-different to gate anyway")
    diffs = compare(figures(ga, price_usd_hour), figures(gb, price_usd_hour), max_regression_pct, keys)
    notes = []
    if systems:
        notes.append(f"different systems: {'; '.join(systems)}: every figure below compares the two systems, "
                     "not a change to one")
    differ = workload_differences(ga, gb)
    if differ:
        notes.append(f"A and B ran different workloads ({'; '.join(differ)}): latency, throughput, goodput and "
                     "$/1M follow the offered load as much as the engine; compare runs of the same scenario and "
                     "settings")
    elif all(g.runs[0].schedule.mode == "open" and g.status not in ("SATURATED", "FAILED") for g in (ga, gb)):
        # below saturation an open loop completes what it is offered: its rates are the schedule's, not the engine's
        notes.append("an open loop at the same offered load that neither side saturated: requests/s, tokens/s, "
                     "goodput and $/1M measure that load, not the engine's headroom; compare capacities from "
                     "`advisor sweep` for that")
    if not ga.is_repeated or not gb.is_repeated:
        notes.append("a single run has no interval: any difference counts as a difference; compare repeat groups "
                     "to tell a change from run-to-run noise")
    for side, g in (("A", ga), ("B", gb)):
        missing = [f.label for f in FIGURES
                   if (not keys or f.key in keys) and not_recorded((r.summary for r in g.runs), f.metric)]
        if missing:  # a run saved before advisor measured these: no figure, not a zero
            notes.append(f"{side} was saved before advisor measured {', '.join(missing)}: not recorded, not compared")
        if g.status != "VALID":
            notes.append(f"{side} is {g.status}: its figures are not steady-state results")
    regressions = [d.key for d in diffs if d.regression]
    if as_json:
        click.echo(json.dumps({"schema": "advisor.compare/1", "a": _side(ga), "b": _side(gb),
                               "different_systems": systems,
                               "max_regression_pct": max_regression_pct, "figures": [d.to_dict() for d in diffs],
                               "regressions": regressions, "notes": notes}, allow_nan=False))
    else:
        _print(ga, gb, diffs, notes, max_regression_pct, bool(systems))
    if regressions:
        raise RegressionFound(f"{len(regressions)} regression(s) past {max_regression_pct:g}% beyond the intervals: "
                              f"{', '.join(regressions)}")


def _print(ga: RepeatGroup, gb: RepeatGroup, diffs: list[Difference], notes: list[str],
           threshold: float | None, different: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    if different:  # what the reader must know before any figure
        con.print(f"[bold yellow]{notes[0]}[/]", highlight=False)
        notes = notes[1:]
    t = Table(title=("different systems: " if different else "")
                    + f"A = {ga.group_id} ({ga.n} run{'s' if ga.n > 1 else ''}, {ga.status})  vs  "
                    f"B = {gb.group_id} ({gb.n} run{'s' if gb.n > 1 else ''}, {gb.status})")
    for col in ("figure", "A", "B", "change", "verdict"):
        t.add_column(col, overflow="fold")
    for d in diffs:
        style = "red" if d.regression or (d.differs and d.worse) else "green" if d.differs else ""
        change = "-" if d.change_pct is None else f"{d.change_pct:+.1f}%"
        t.add_row(f"{d.label} ({d.unit})", d.a.text(), d.b.text(), change,
                  f"[{style}]{d.verdict()}[/]" if style else d.verdict())
    con.print(t)
    if threshold is not None and not any(d.regression for d in diffs):
        con.print(f"no regression past {threshold:g}% beyond the intervals")
    for n in notes:
        con.print(f"[dim]note: {n}[/]", highlight=False)
