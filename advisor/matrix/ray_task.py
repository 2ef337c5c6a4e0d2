"""What runs on a Ray node: one cell as a task, and the small actor cells report their progress to.

`cell_task` checks the node (advisor version, engine, model, server program), runs the cell with
`run_cell` (the same code path as a local run) into a temporary folder on the node, and returns its runs
packed into one archive. A cell that fails returns its reason and whatever runs it saved, so an
application failure is never retried; only the death of its node or worker makes Ray run it again.
Imported by reference on the workers: advisor must be installed there (or shipped with --ship-code).
"""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path
from typing import Any


class Events:
    """A mailbox on the head node: cells post (kind, cell, ...) tuples, the driver drains them."""

    def __init__(self) -> None:
        self._events: list[tuple[Any, ...]] = []

    def add(self, event: tuple[Any, ...]) -> None:
        self._events.append(event)

    def drain(self) -> list[tuple[Any, ...]]:
        out, self._events = self._events, []
        return out


def cell_task(cell_data: dict[str, Any], driver_version: str, events: Any) -> dict[str, Any]:
    """Run one cell on this node; returns its run ids, sweep id, packed runs, and an error if it failed."""
    import ray

    import advisor
    from advisor.matrix.bundle import pack
    from advisor.matrix.cell import CellError, run_cell
    from advisor.matrix.plan import Cell

    name = str(cell_data["name"])
    node_id = ray.get_runtime_context().get_node_id()
    where = f"{node_id[:8]} ({ray.util.get_node_ip_address()}, {socket.gethostname()})"
    ray.get(events.add.remote(("started", name, node_id, where)))  # acknowledged: the driver sees it before the result
    out: dict[str, Any] = {"run_ids": [], "sweep_id": None, "archive": None, "error": None, "node": where}
    with tempfile.TemporaryDirectory(prefix="advisor-cell-") as tmp:
        try:
            if advisor.__version__ != driver_version:
                raise CellError(f"node {where} runs advisor {advisor.__version__} but the driver runs {driver_version}: "
                                "install the same version on every node, or pass --ship-code")
            cell = Cell.model_validate(cell_data)
            runs = run_cell(cell, Path(tmp), on_progress=lambda msg: ray.get(events.add.remote(("progress", name, msg))),
                            cpus_held=cell.cpus())
            out["run_ids"], out["sweep_id"] = list(runs.run_ids), runs.sweep_id
        except Exception as e:  # the cell failed on this node: say why and keep what it saved; Ray must not retry
            out["error"] = str(e) if isinstance(e, CellError | ValueError | RuntimeError | OSError) \
                else f"{type(e).__name__}: {e}"
        if any(Path(tmp).iterdir()):
            out["archive"] = pack(Path(tmp))
    return out
