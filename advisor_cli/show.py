"""`advisor show RUN_OR_SWEEP`: a saved run, or a saved sweep's steps and capacity, printed again."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from advisor_cli.options import RUNS


@click.command("show")
@click.argument("run", metavar="RUN_OR_SWEEP")
@click.option("--runs", "root", type=click.Path(path_type=Path), default=RUNS, show_default=True,
              help="Folder of saved runs that an id is looked up in.")
@click.option("--json", "as_json", is_flag=True, help="Print the saved result.json (a sweep: its sweep.json).")
def show_command(run: str, root: Path, as_json: bool) -> None:
    """Show a saved run or sweep (a folder, or an id under --runs)."""
    from advisor.run import console
    from advisor.saved.atomic import unfinished_warning
    from advisor.saved.store import RESULT_FILE, item_folder, load_run, unfinished
    from advisor.sweep.run import SWEEP_FILE, load_sweep

    folder = item_folder(run, root)
    if Path(run).is_file() and not any((folder / name).is_file() for name in (RESULT_FILE, SWEEP_FILE)):
        raise click.UsageError(f"{run} is a file, not a saved run or sweep; give a run or sweep folder, its "
                               f"{RESULT_FILE} or {SWEEP_FILE}, or an id from `ls {root}`")
    if (folder / SWEEP_FILE).is_file():
        sweep = load_sweep(run, root)
        if as_json:
            click.echo(json.dumps(sweep.to_dict(), default=str))
        else:
            print_sweep(sweep, folder)
        return
    if folder in unfinished([folder.parent]):
        click.echo(unfinished_warning(folder), err=True)
    if not (folder / RESULT_FILE).is_file():
        raise click.UsageError(f"no run or sweep at {run} (looked for {folder / RESULT_FILE} and {SWEEP_FILE}); "
                               f"give a run or sweep id from `ls {root}`, or its folder")
    result = load_run(run, root)
    if as_json:
        click.echo(json.dumps(result.to_dict(), allow_nan=False))
    else:
        console.print_run(result, view=True)


def print_sweep(sweep: Any, folder: Path) -> None:
    """Its steps (each a run `advisor show` prints), the capacity and why it stopped (or that it was abandoned)."""
    from advisor.sweep.capacity import capacity_text
    from advisor.sweep.run import SWEEP_FILE, abandoned, resume_command
    from advisor_cli.sweep import step_line

    model = f", model {sweep.model}" if sweep.model else ""
    gone = sweep.state == "running" and abandoned(folder)
    state = "abandoned: saved as running, but no advisor runs it" if gone else sweep.state
    click.echo(f"sweep {sweep.sweep_id} ({state}): {sweep.scenario} on {sweep.engine}{model}")
    for p in sweep.points:
        click.echo(step_line(p))
    if sweep.interrupted:
        i = sweep.interrupted
        load = f"{i.get('load'):g} {'users' if sweep.unit == 'users' else 'req/s'}"
        click.echo(f"interrupted by {i.get('signal')} at {load} (not counted; its partial run: {i.get('run_id')})")
    cap = sweep.capacity
    click.echo(f"capacity: {capacity_text(cap.capacity_rps, cap.capacity_users)} - {cap.reason}")
    if gone:
        hours = (time.time() - (folder / SWEEP_FILE).stat().st_mtime) / 3600
        click.echo(f"stopped: abandoned after {len(sweep.points)} step(s): its last save was {hours:.1f} h ago and "
                   f"no process holds it (killed, or its machine went); go on with "
                   f"`{resume_command(sweep.sweep_id, folder.parent)}`")
    else:
        click.echo(f"stopped: {sweep.stop_reason or 'not yet (it is running)'}")
