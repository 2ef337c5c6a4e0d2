"""`advisor matrix PLAN.yaml`: run a plan of benchmark cells here, or on a Ray cluster with --ray."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from advisor.run import interrupts
from advisor.run.config import MAX_REPEATS
from advisor_cli.options import RUNS, out_folder

if TYPE_CHECKING:
    from advisor.matrix.store import MatrixFile


@click.command("matrix")
@click.argument("plan_file", metavar="[PLAN.yaml]", required=False, type=click.Path(path_type=Path))
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS|auto",
              help="Run each cell as a Ray task: HOST:PORT, ray://HOST:10001, or auto (RAY_ADDRESS, a cluster "
                   "running here, else a new local one). Needs the `ray` extra.")
@click.option("--resume", "resume_id", default=None, metavar="MATRIX_ID",
              help="Run the cells of this matrix that did not finish (its plan is the recorded one).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=RUNS, show_default=True, help="Runs store: every run, sweep and the matrix file go here.",
              callback=lambda c, p, v: out_folder(v))
@click.option("--check", "check_only", is_flag=True, help="Check the plan (and its placement) and run nothing.")
@click.option("--ship-code", is_flag=True, help="With --ray: send this install's advisor code to the workers.")
@click.option("--node-wait", "node_wait_s", type=float, default=0.0, show_default=True,
              help="With --ray on an autoscaling cluster: seconds a cell may wait for a node that can run it.")
@click.option("--repeats", type=click.IntRange(1, MAX_REPEATS), default=None,
              help="Run every cell N times (a cell's own `repeats:` wins); each repeat an ordinary run, grouped.")
@click.option("--json", "as_json", is_flag=True, help="Print the matrix file at the end and nothing else on stdout.")
def matrix_command(plan_file: Path | None, ray_address: str | None, resume_id: str | None, out_dir: Path,
                   check_only: bool, ship_code: bool, node_wait_s: float, repeats: int | None, as_json: bool) -> None:
    """Run a matrix of benchmark cells: engine x model x options x scenario x rates, each where it fits.

    \b
    Examples:
      advisor matrix plan.yaml                       # here, one cell after another
      advisor matrix plan.yaml --ray auto            # on Ray: each cell on a node with its resources
      advisor matrix --resume 20261122-101500-matrix-cpu-ab12 --ray 10.0.0.5:6379
    Progress goes to stderr; runs land in --out as `advisor bench`/`advisor sweep` save them, and
    <out>/<matrix-id>/matrix.json records the plan, each cell's state, node and run ids.
    """
    from advisor.matrix.plan import PlanError, load_plan
    from advisor.matrix.run import run_matrix
    from advisor.matrix.store import MatrixFile, load_matrix, new_matrix_id, same_cells

    matrix: MatrixFile | None = None

    if node_wait_s < 0:
        raise click.UsageError("--node-wait must be >= 0 seconds")
    if (ship_code or node_wait_s) and ray_address is None:
        raise click.UsageError("--ship-code and --node-wait apply to --ray only")

    def say(line: str) -> None:
        click.echo(line, err=True)

    try:
        if resume_id is not None:
            if repeats is not None:
                raise click.UsageError("--repeats applies to a new matrix; a resumed one runs its recorded plan "
                                       "(start a new matrix to change the repeats)")
            matrix = load_matrix(resume_id, out_dir)
            if plan_file is not None:
                diff = same_cells(load_plan(plan_file), matrix.plan)
                if diff:
                    raise click.UsageError(f"{plan_file} is not the plan matrix {resume_id} ran ({diff}); resume "
                                           "without PLAN.yaml to use the recorded plan, or start a new matrix")
            matrix.close_open_attempts()
            say(f"resuming {matrix.matrix_id}: {len(matrix.todo())} of {len(matrix.plan.cells)} cells to run")
        elif plan_file is None:
            raise click.UsageError("give a PLAN.yaml, or --resume MATRIX_ID")
        else:
            plan = load_plan(plan_file)
            if repeats is not None:
                plan = plan.with_repeats(repeats)
            matrix = MatrixFile(new_matrix_id(plan.name), out_dir, plan, "local")
        matrix = run_matrix(matrix, say, ray_address=ray_address, ship_code=ship_code, node_wait_s=node_wait_s,
                            check_only=check_only)
    except PlanError as e:
        for p in e.problems:
            click.echo(f"error: {p}", err=True)
        sys.exit(2)
    except KeyboardInterrupt as e:
        if matrix is not None and matrix.path.is_file():
            say(f"interrupted: finished cells are kept; resume with `advisor matrix --resume {matrix.matrix_id}`")
        else:
            say("interrupted before any cell started")
        sys.exit(interrupts.exit_code(e))  # 128 + the signal, as bench
    assert matrix is not None
    if check_only:
        say(f"plan ok: {len(matrix.todo())} cell(s) can run {'here' if ray_address is None else 'on the cluster'}")
        return
    _report(matrix, as_json)
    failed = [r.name for r in matrix.cells.values() if r.state != "done"]
    if failed:
        say(f"{len(failed)} cell(s) did not finish: {', '.join(failed)}; the others are kept. Rerun those with "
            f"`advisor matrix --resume {matrix.matrix_id}`")
        sys.exit(1)


def _report(matrix: MatrixFile, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(matrix.to_dict()))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=f"matrix {matrix.matrix_id} ({matrix.backend})")
    for col in ("cell", "state", "node", "runs", "note"):
        t.add_column(col)
    for c in matrix.plan.cells:
        r = matrix.cells[c.name]
        runs = f"sweep {r.sweep_id} ({len(r.run_ids)})" if r.sweep_id else ", ".join(r.run_ids) or "-"
        retried = f"{len(r.attempts)} attempts" if len(r.attempts) > 1 else ""
        note = "; ".join(x for x in (retried, r.error or "") if x)
        t.add_row(*(escape(x) for x in (c.name, r.state, r.node or "-", runs, note)))  # "[ray]" is text, not markup
    Console(file=sys.stdout, width=160).print(t)
    click.echo(f"saved: {matrix.path}")
