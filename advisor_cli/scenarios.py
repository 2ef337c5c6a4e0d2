"""`advisor scenarios`: list the shipped scenarios (the default) and `advisor scenarios fit` one from your logs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click

from advisor_cli.options import fail


def _list(as_json: bool) -> None:
    from scenarios.catalog import list_scenarios

    items = list_scenarios()
    if as_json:
        click.echo(json.dumps([s.model_dump(mode="json") for s in items]))
        return
    from advisor.run import console
    from scenarios.embed_schedule import embed_scenario_names, load_embed_scenario
    from scenarios.rag_schedule import load_rag_scenario, rag_scenario_names

    console.print_scenarios(items)
    click.echo("embed scenarios (run with `advisor embed --scenario NAME`):")
    console.print_scenarios([load_embed_scenario(n) for n in embed_scenario_names()])
    click.echo("rag scenarios (run with `advisor rag --scenario NAME`):")
    console.print_scenarios([load_rag_scenario(n) for n in rag_scenario_names()])


@click.group("scenarios", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="The list as one JSON document.")
@click.pass_context
def scenarios_command(ctx: click.Context, as_json: bool) -> None:
    """List the traffic scenarios shipped with the tool, or fit one from your request logs.

    \b
    advisor scenarios                          # the shipped scenarios (same as `advisor scenarios list`)
    advisor scenarios fit LOG... -o my-traffic.yaml
    """
    if ctx.invoked_subcommand is None:
        _list(as_json)
    elif as_json:
        raise click.UsageError(f"--json goes after the sub-command: advisor scenarios {ctx.invoked_subcommand} --json")


@scenarios_command.command("list")
@click.option("--json", "as_json", is_flag=True, help="The list as one JSON document.")
def list_command(as_json: bool) -> None:
    """List the traffic scenarios shipped with the tool."""
    _list(as_json)


_FIT_HELP = """Fit a scenario YAML from request logs: arrivals, token lengths, prefix reuse and sessions.

\b
LOG: JSONL request logs (OpenAI-style usage fields, e.g. an LiteLLM or gateway log), CSV with timestamp,
input and output token columns (the Azure trace and BurstGPT layouts, or a metrics-store export), or
Mooncake JSONL; .gz is read transparently. Several logs are merged and sorted by time.

\b
Writes -o FILE.yaml (an ordinary scenario: `advisor bench --scenario FILE.yaml`), FILE.pairs.csv.gz (the
observed length pairs it resamples) and FILE.fit.html (the log compared with a schedule generated from
the scenario, with plots). Only timestamps, token counts and ids are read: never prompt or completion text.
"""


@scenarios_command.command("fit", help=_FIT_HELP)
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--output", "-o", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The scenario YAML to write (FILE.yaml).")
@click.option("--name", default=None, help="Scenario name; default: from the output file name.")
@click.option("--field", "fields", multiple=True, metavar="ROLE=NAME",
              help="Where a value is in your log (repeatable): roles time, input, output, session, model, end, "
                   "latency_s, latency_ms, prefix, cached. JSONL: a dotted path (usage.prompt_tokens); CSV: a column.")
@click.option("--format", "log_format", type=click.Choice(["auto", "csv", "jsonl"]), default="auto", show_default=True,
              help="Log format; auto: from the extension, else the first line.")
@click.option("--time-unit", type=click.Choice(["auto", "iso", "s", "ms", "us", "ns"]), default="auto",
              show_default=True, help="Unit of numeric timestamps; auto detects it and says what it decided.")
@click.option("--lengths", type=click.Choice(["pairs", "lognormal"]), default="pairs", show_default=True,
              help="pairs: resample observed (input, output) pairs; lognormal: a correlated lognormal fit.")
@click.option("--model", default=None, help="Fit only the rows of this model (the log's model field).")
@click.option("--rate", type=float, default=None, help="Scale the fitted arrivals to this mean rate (req/s).")
@click.option("--duration", type=float, default=None,
              help="The scenario's duration_s; default: the log's span, at most 3600 s (a longer rate profile "
                   "is compressed in time, and says so).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the comparison schedule and sampling.")
@click.option("--max-pairs", type=int, default=200_000, show_default=True,
              help="Most length pairs kept (a uniform sample of bigger logs).")
@click.option("--no-html", is_flag=True, help="Do not write the HTML report.")
@click.option("--json", "as_json", is_flag=True, help="Print the fit report as one JSON document.")
def fit_command(logs: tuple[Path, ...], out: Path, name: str | None, fields: tuple[str, ...], log_format: str,
                time_unit: str, lengths: str, model: str | None, rate: float | None, duration: float | None,
                seed: int, max_pairs: int, no_html: bool, as_json: bool) -> None:
    from scenarios.fit.fields import FieldMap
    from scenarios.fit.fit import FitOptions, fit_logs

    for flag, v in (("--rate", rate), ("--duration", duration)):
        if v is not None and not (v > 0 and v != float("inf")):
            fail(f"{flag} must be a number > 0, got {v}")
    if seed < 0 or max_pairs < 1:
        fail(f"--seed must be >= 0 and --max-pairs >= 1, got {seed} and {max_pairs}")
    if name is not None and not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name):
        fail(f"--name must be lowercase letters, digits, '-' and '_', starting with a letter or digit, got {name!r}")
    try:
        field_map = FieldMap.parse(fields)
    except ValueError as e:
        fail(str(e))
    opts = FitOptions(logs=logs, out=out, name=name, fields=field_map, log_format=log_format,  # type: ignore[arg-type]
                      time_unit=time_unit, lengths=lengths, model=model, rate_rps=rate,  # type: ignore[arg-type]
                      duration_s=duration, seed=seed, max_pairs=max_pairs, html=not no_html)
    report = fit_logs(opts)
    if as_json:
        click.echo(json.dumps(_jsonable(report.to_dict()), allow_nan=False))
        return
    _print_fit(report)


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and v != v:
        return None
    return v


def _fmt(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _print_arrival_check(c: dict[str, Any]) -> None:
    from rich.table import Table

    from advisor.run.console import out

    n = c["requests_per_seed"]
    t = Table(title=f"arrivals drawn over seeds 0-{c['seeds'] - 1} ({c['window_s']:,.0f} s each: {min(n):,}-{max(n):,} "
                    f"requests against the log's {c['expected_requests']:,.0f}, ±{c['spread']:.0%}, tolerance "
                    f"±{c['spread_bound']:.0%})", title_justify="left")
    for col in ("statistic", "log", "mean", "lowest", "highest", "diff", "tolerance"):
        t.add_column(col, justify="left" if col == "statistic" else "right")
    for row in c["rows"]:
        diff = f"{row['rel_diff'] * 100:+.1f}%"
        tol = "shown" if row["tolerance"] is None else f"±{row['tolerance']:.0%}"
        t.add_row(row["stat"], _fmt(row["log"]), _fmt(row["mean"]), _fmt(row["low"]), _fmt(row["high"]),
                  diff if row["ok"] else f"[red]{diff}[/]", tol)
    out.print(t)


def _print_fit(r: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    from advisor.run.console import out

    for s in r.sources:
        out.print(f"read {s.rows:,} requests from {escape(s.path)} ({escape(s.layout)})")
    out.print(f"timestamps: {escape(r.time_statement)}; {r.out_of_order:,} rows out of order"
              + (" (sorted)" if r.out_of_order else ""))
    out.print(f"arrivals: {escape(r.arrival_why)}")
    out.print(f"lengths: {escape(r.length_comment)}")
    if r.prefix:
        out.print(f"prefix reuse: an ideal prefix cache would hit {r.prefix['hit_ratio']:.1%} of prompt tokens "
                  f"({r.prefix['rows_reusing']:,} of {r.prefix['rows_with_hashes']:,} requests reuse a prefix)")
    if r.sessions:
        how = ("a run replays them as multi-turn conversations" if r.sessions.get("replayed")
               else "not replayed: see the notes")
        out.print(f"sessions: {escape(r.sessions['comment'])} ({how})")
    out.print("SLOs: left unset: set them in the YAML (a log shows your traffic, not your users' latency needs)")
    for n in r.notes:
        out.print(f"[yellow]note:[/] {escape(n)}")
    if r.arrival_check:
        _print_arrival_check(r.arrival_check)
    for w in r.warnings:
        out.print(f"[red]warning:[/] {escape(w)}")
    t = Table(title=f"log vs a generated schedule ({r.schedule_requests:,} requests, seed {r.seed})",
              title_justify="left")
    for c in ("quantity", "statistic", "log", "schedule", "diff"):
        t.add_column(c, justify="right" if c in ("log", "schedule", "diff") else "left")
    last = None
    for row in r.comparison:
        if row.kind == "ks":
            diff = f"{row.schedule:.3f}"
            bad = row.schedule > 0.05
        elif row.kind == "abs":
            diff = f"{row.schedule - row.log:+.3f}"
            bad = abs(row.schedule - row.log) > 0.05
        else:
            d = row.rel_diff
            diff = "—" if d is None else f"{d * 100:+.1f}%"
            bad = d is not None and abs(d) > 0.10
        t.add_row(row.quantity if row.quantity != last else "", row.stat, _fmt(row.log), _fmt(row.schedule),
                  f"[red]{diff}[/]" if bad else diff)
        last = row.quantity
    out.print(t)
    for what, path in r.outputs.items():
        out.print(f"wrote {what}: {escape(path)}")
    out.print(f"next: advisor bench --scenario {escape(r.outputs['scenario'])}")
