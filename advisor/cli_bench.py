"""`advisor bench`, `advisor scenarios`, `advisor engines` and `advisor show`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from advisor.cli_options import engine_options, fail, overrides_from


@click.command("bench")
@click.option("--scenario", "-s", required=True, help="Scenario name (see `advisor scenarios`) or a path to a YAML file.")
@click.option("--engine", "-e", default="own", show_default=True, help="Engine adapter (see `advisor engines`).")
@click.option("--model", "-m", default=None, help="Model folder or name in the model cache; default: the built-in tiny model.")
@click.option("--rate", type=float, default=None, help="Request rate (req/s) instead of the scenario's.")
@click.option("--duration", type=float, default=None, help="Measurement window in seconds.")
@click.option("--warmup", type=float, default=None, help="Warm-up seconds before the window (excluded).")
@click.option("--concurrency", type=int, default=None, help="Closed-loop users (closed-loop scenarios).")
@click.option("--max-requests", type=int, default=None, help="Cap the number of requests.")
@click.option("--seed", type=int, default=None, help="Schedule seed (same seed, same requests).")
@click.option("--length-scale", type=float, default=None, help="Multiply input and output token lengths.")
@click.option("--max-input-tokens", type=int, default=None, help="Cap prompt lengths.")
@click.option("--max-output-tokens", type=int, default=None, help="Cap output lengths.")
@click.option("--full-scale", is_flag=True, help="Use the scenario's real traffic shape, not its small-machine fit.")
@click.option("--threads", type=int, default=None, help="Engine CPU threads.")
@click.option("--device", default=None, help="Engine device (auto, cpu, cuda).")
@click.option("--url", default=None, help="Server URL for the openai engine.")
@click.option("--launch", default=None, help="Server command the tool starts, benchmarks and stops (openai engine).")
@click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE", help="Extra engine option (repeatable).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"),
              show_default=True, help="Folder for saved runs.")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True, help="Per-request timeout (s).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (the saved result) and nothing else.")
def bench_command(scenario: str, engine: str, model: str | None, opts: tuple[str, ...], threads: int | None,
                  device: str | None, url: str | None, launch: str | None, out_dir: Path, timeout_s: float,
                  as_json: bool, **over: Any) -> None:
    """Run one traffic scenario against one engine and save the run.

    \b
    Examples:
      advisor bench --scenario copilot
      advisor bench --scenario bursty --engine own-static
      advisor bench --scenario chat --full-scale --engine openai --url http://127.0.0.1:8000
    """
    from advisor import console
    from advisor.bench import BenchConfig, run_bench

    overrides = overrides_from(over)
    options = engine_options(opts, threads=threads, device=device, url=url, launch=launch)
    if timeout_s <= 0:
        fail("--timeout must be > 0 seconds")
    cfg = BenchConfig(scenario=scenario, engine=engine, model=model, overrides=overrides, engine_options=options,
                      out_dir=out_dir, timeout_s=timeout_s, quiet=as_json)
    show_progress = not as_json and sys.stderr.isatty()
    with console.progress_bar(enabled=show_progress) as progress:
        result = run_bench(cfg, progress=progress)
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "path": str(result.path)}, allow_nan=False))
    else:
        console.print_run(result)


@click.command("show")
@click.argument("run")
@click.option("--runs", "root", type=click.Path(path_type=Path), default=Path("runs"), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the saved result.json.")
def show_command(run: str, root: Path, as_json: bool) -> None:
    """Show a saved run (a run folder or a run id under --runs)."""
    from advisor import console
    from advisor.store import load_run

    result = load_run(run, root)
    if as_json:
        click.echo(json.dumps(result.to_dict(), allow_nan=False))
    else:
        console.print_run(result)


@click.command("scenarios")
@click.option("--json", "as_json", is_flag=True)
def scenarios_command(as_json: bool) -> None:
    """List the traffic scenarios shipped with the tool."""
    from scenarios.catalog import list_scenarios

    items = list_scenarios()
    if as_json:
        click.echo(json.dumps([s.model_dump(mode="json") for s in items]))
        return
    from advisor import console

    console.print_scenarios(items)


@click.command("engines")
@click.option("--json", "as_json", is_flag=True)
def engines_command(as_json: bool) -> None:
    """List every engine adapter: available here, or missing and why (with the install hint)."""
    import adapters

    rows = [{"name": e.name, "available": why is None, "why": why, "extra": e.extra, "summary": e.summary}
            for e, why in adapters.available()]
    if as_json:
        click.echo(json.dumps(rows))
        return
    from advisor import console

    console.print_engines(rows)
