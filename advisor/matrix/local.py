"""The embedded default: the cells run here, one after another, in plan order.

Before the first cell starts, every cell is checked against this machine (its resources, the engine's
packages, the model, the server program), so a plan that cannot finish here fails at once with one
line per problem. A cell that fails while running is recorded with its reason and the next one starts;
Ctrl-C (or SIGTERM, which the command turns into the same) keeps the finished cells and the partial
runs of the interrupted one, and says in the matrix file which cell it was.
"""

from __future__ import annotations

import shutil
import socket

from advisor.matrix.bundle import ingest
from advisor.matrix.cell import CellError, check_here, run_cell
from advisor.matrix.needs import local_node, why_unplaceable
from advisor.matrix.plan import Cell, PlanError
from advisor.matrix.progress import CellLog

HINT = "custom resources and node labels come from a Ray cluster's nodes: run with --ray ADDRESS"


def check_local(log: CellLog) -> None:
    """Every cell still to run must be able to run here; raises PlanError listing those that cannot."""
    node = local_node()
    problems = []
    for cell in log.matrix.todo():
        why = why_unplaceable(cell, [node])
        if why is not None:
            problems.append(f"{why} ({HINT})" if _cluster_only(cell) else why)
            continue
        try:
            check_here(cell)
            _check_ray_workers(cell)
        except CellError as e:
            problems.append(f"cell '{cell.name}': {e}")
    if problems:
        raise PlanError(problems)


def _check_ray_workers(cell: Cell) -> None:
    """A `workers: ray:N` cell run here needs Ray installed: say so now, not after the cells before it ran."""
    from advisor.loadgen import worker_spec
    from advisor.matrix.ray_connect import RayConnectError, import_ray

    if worker_spec.on_ray(worker_spec.parse(cell.workers)) is None:
        return
    try:
        import_ray(f"workers: {cell.workers}")
    except RayConnectError as e:
        raise CellError(str(e)) from None


def _cluster_only(cell: Cell) -> bool:
    """Does the cell ask for what only a Ray cluster's nodes declare (custom resources, labels)?"""
    return bool(cell.labels) or any(k not in ("CPU", "GPU", "memory") and not k.startswith("accelerator_type:")
                                    for k in cell.requirement())


def run_local(log: CellLog) -> None:
    """Run every unfinished cell here, in order; a KeyboardInterrupt is recorded, then re-raised."""
    matrix = log.matrix
    where = f"{socket.gethostname()} (local)"
    for cell in matrix.todo():
        staging = matrix.folder / "staging" / cell.name
        shutil.rmtree(staging, ignore_errors=True)
        log.started(cell.name, "local", where)
        try:
            runs = run_cell(cell, staging, on_progress=lambda msg, name=cell.name: log.progress(name, msg))
        except KeyboardInterrupt:
            log.interrupted(cell.name, ingest(staging, matrix.root))
            raise
        except Exception as e:  # any failure of one cell is recorded with its reason; the matrix goes on
            log.failed(cell.name, _reason(e), ingest(staging, matrix.root))
        else:
            ingest(staging, matrix.root)
            log.done(cell.name, runs)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(matrix.folder / "staging", ignore_errors=True)


def _reason(e: BaseException) -> str:
    if isinstance(e, CellError | ValueError | RuntimeError | OSError):
        return str(e) or type(e).__name__
    return f"{type(e).__name__}: {e}"
