"""`advisor bench`: one scenario against one engine, saved as a run (or `--repeats N` runs, grouped)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from advisor_cli.options import bench_config, engine_flags, repeat_flags, run_flags, scenario_flags

# Exit codes by verdict (README, "Exit codes"): CI can gate on them; --exit-zero (or ADVISOR_EXIT_ZERO=1) gives 0.
VERDICT_EXIT = {"VALID": 0, "SATURATED": 0, "INVALID": 3, "FAILED": 4}


def verdict_exit(statuses: list[str], exit_zero: bool) -> int:
    """The exit code of the worst verdict among `statuses` (0 with --exit-zero)."""
    if exit_zero or os.environ.get("ADVISOR_EXIT_ZERO", "").strip() not in ("", "0"):
        return 0
    return max((VERDICT_EXIT.get(s, 3) for s in statuses), default=0)


@click.command("bench")
@scenario_flags()
@engine_flags
@run_flags
@repeat_flags
@click.option("--exit-zero", is_flag=True, help="Exit 0 whatever the verdict (default: INVALID exits 3, FAILED 4).")
def bench_command(as_json: bool, repeats: int, restart_engine: bool, exit_zero: bool, **flags: Any) -> None:
    """Run one traffic scenario against one engine and save the run.

    \b
    Examples:
      advisor bench --scenario copilot
      advisor bench --scenario bursty --engine own-static
      advisor bench --scenario chat --full-scale --engine openai --url http://127.0.0.1:8000
      advisor bench --scenario copilot --repeats 6     # median [interval] of 6 runs
      advisor bench --scenario copilot --device sim:h200   # own on a simulated H200: no GPU, never priced
    """
    from advisor.run import console
    from advisor.run.bench import RunNotSaved, bench_once
    from advisor.saved.redact import redact_text

    cfg = bench_config(**flags)
    if repeats > 1 or restart_engine:
        statuses = _bench_repeats(cfg, repeats, restart_engine, as_json)
        sys.exit(verdict_exit(statuses, exit_zero))
    show_progress = not as_json and sys.stderr.isatty()
    not_saved: RunNotSaved | None = None
    with console.progress_bar(enabled=show_progress) as progress:
        try:
            result = bench_once(cfg, progress=progress)
        except RunNotSaved as e:  # measured, not written (a full disk): show it all, then say what was lost
            result, not_saved = e.result, e
    if as_json:
        path = str(result.path) if result.path is not None else None
        click.echo(redact_text(json.dumps({**result.to_dict(), "path": path}, allow_nan=False)))
    else:
        console.print_run(result)
    if not_saved is not None:
        raise click.ClickException(str(not_saved))
    sys.exit(verdict_exit([result.verdict.status], exit_zero))


def _bench_repeats(cfg: Any, n: int, restart: bool, as_json: bool) -> list[str]:
    """The same cell n times, one engine for all (or a fresh one each); a repeat group of saved runs."""
    from advisor.repeats.group import repeat_tag, run_repeats
    from advisor.repeats.table import print_group
    from advisor.run.bench import bench_once, open_engine, plan, run_bench

    p = plan(cfg)
    label = f"{p.scenario.name}-{cfg.engine}"

    def said(i: int, run: Any) -> None:  # names the group at once: a Ctrl-C later keeps the repeats before it
        if not as_json:
            click.echo(f"repeat {i + 1}/{n}: {run.verdict.status} (run {run.run_id}, group "
                       f"{repeat_tag(run).group_id}: `advisor compare` and `report` take the group id)", err=True)

    if restart:
        group = run_repeats(lambda i: bench_once(cfg), n, label=label, restart_engine=True, on_repeat=said)
    else:
        with open_engine(cfg, p.options) as adapter:
            group = run_repeats(lambda i: run_bench(cfg, adapter, planned=p), n, label=label, on_repeat=said)
    if as_json:
        click.echo(json.dumps({"group": group.to_dict(), "runs": [{**r.to_dict(), "path": str(r.path)}
                                                                  for r in group.runs]}, allow_nan=False))
    else:
        print_group(group)
    return [r.verdict.status for r in group.runs]
