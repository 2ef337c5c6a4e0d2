"""Run the cells on a Ray cluster: each cell is a Ray task placed on a node that has what it needs.

Before anything is submitted, every cell is checked against the cluster's alive nodes (`ray.nodes()`):
a cell no node can ever run fails the plan with the missing resource named, instead of waiting forever.
Then all cells are submitted at once (Ray queues those whose nodes are busy) with:

- resources: `num_cpus` (default 1), `num_gpus`, `memory`, custom resources, `accelerator_type`, and
  `label_selector` for node labels, exactly as the cell asks;
- `max_retries=1`, `retry_exceptions=False`: Ray runs a cell again once when its node or worker dies,
  never after the cell itself failed (the task returns that failure instead of raising it).

Cells post "started on node" and sweep steps to a small actor on the head node, which the driver drains
to show progress and to see a retry start on another node. Finished runs come back packed in the task's
result and go into the runs store; every few seconds the cells still waiting are checked again against
the alive nodes, so a cell whose last capable node died fails with the reason instead of hanging.
"""

from __future__ import annotations

import shutil
import time
from typing import Any

import advisor
from advisor.matrix.bundle import ingest, unpack
from advisor.matrix.cell import CellRuns
from advisor.matrix.needs import NodeView, nodes_from_ray, why_unplaceable
from advisor.matrix.plan import Cell, PlanError
from advisor.matrix.progress import CellLog
from advisor.matrix.ray_task import Events, cell_task

RECHECK_S = 5.0


class RayRunner:
    def __init__(self, ray: Any, log: CellLog, node_wait_s: float = 0.0) -> None:
        self.ray = ray
        self.log = log
        self.matrix = log.matrix
        self.node_wait_s = node_wait_s
        self._task = ray.remote(cell_task)
        self._events_cls = ray.remote(Events)

    def nodes(self) -> list[NodeView]:
        return nodes_from_ray(self.ray.nodes())

    def check(self) -> None:
        """Every cell still to run must fit some alive node; raises PlanError listing those that do not."""
        if self.node_wait_s > 0:
            return  # an autoscaling cluster may add the nodes: the loop fails a cell after node_wait_s
        nodes = self.nodes()
        problems = [why for c in self.matrix.todo() if (why := why_unplaceable(c, nodes)) is not None]
        if problems:
            raise PlanError(problems)

    def options(self, cell: Cell) -> dict[str, Any]:
        res = {k: v for k, v in cell.resources.items() if k not in ("CPU", "GPU", "memory")}
        opts: dict[str, Any] = {"num_cpus": cell.cpus(), "max_retries": 1, "retry_exceptions": False,
                                "name": f"advisor-cell:{cell.name}"}
        if cell.resources.get("GPU"):
            opts["num_gpus"] = cell.resources["GPU"]
        if cell.resources.get("memory"):
            opts["memory"] = cell.resources["memory"]
        if res:
            opts["resources"] = res
        if cell.accelerator:
            opts["accelerator_type"] = cell.accelerator
        if cell.labels:
            opts["label_selector"] = dict(cell.labels)
        return opts

    def run(self) -> None:
        """Submit every unfinished cell and collect them as they finish; KeyboardInterrupt is recorded, re-raised."""
        ray = self.ray
        # The mailbox lives on the head node, which outlives any worker node that dies.
        events = self._events_cls.options(num_cpus=0, resources={"node:__internal_head__": 0.001}).remote()
        pending: dict[Any, str] = {}
        for cell in self.matrix.todo():
            ref = self._task.options(**self.options(cell)).remote(cell.model_dump(mode="json"), advisor.__version__,
                                                                   events)
            pending[ref] = cell.name
        t_submit = time.monotonic()
        last_check = t_submit
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0.5)
                self._drain(events)
                for ref in ready:
                    self._collect(ref, pending.pop(ref))
                if time.monotonic() - last_check > RECHECK_S and time.monotonic() - t_submit > self.node_wait_s:
                    last_check = time.monotonic()
                    self._fail_unplaceable(pending)
        except KeyboardInterrupt:
            for ref, name in pending.items():
                ray.cancel(ref, force=True)
                if self.matrix.cells[name].state == "running":
                    self.log.interrupted(name, [])  # its partial runs stay on the node's temporary folder
            raise
        finally:
            shutil.rmtree(self.matrix.folder / "staging", ignore_errors=True)

    def _drain(self, events: Any) -> None:
        for ev in self.ray.get(events.drain.remote()):
            if ev[0] == "started":
                self.log.started(ev[1], ev[2], ev[3])
            elif ev[0] == "progress":
                self.log.progress(ev[1], ev[2])

    def _collect(self, ref: Any, name: str) -> None:
        ray = self.ray
        try:
            out = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            self.log.failed(name, "cancelled")
            return
        except ray.exceptions.RayError as e:  # node or worker died on the retry too (or Ray itself failed)
            rec = self.matrix.cells[name]
            nodes = [a.node for a in rec.attempts]
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if rec.attempts and rec.attempts[-1].ended_utc is None:
                self.log.lost(name, f"node {nodes[-1]} died during the cell")
            self.log.failed(name, f"failed twice: its node died on both attempts ({', '.join(nodes) or 'never started'}); "
                                  f"Ray: {type(e).__name__}: {first}")
            return
        staging = self.matrix.folder / "staging" / name
        shutil.rmtree(staging, ignore_errors=True)
        if out["archive"] is not None:
            unpack(out["archive"], staging)
        moved = ingest(staging, self.matrix.root)
        shutil.rmtree(staging, ignore_errors=True)
        if out["error"] is not None:
            self.log.failed(name, out["error"], moved)
        else:
            self.log.done(name, CellRuns(tuple(out["run_ids"]), out["sweep_id"]))

    def _fail_unplaceable(self, pending: dict[Any, str]) -> None:
        """A cell still waiting that no alive node can run any more (its nodes died) fails now."""
        nodes = self.nodes()
        alive = {n.node_id for n in nodes if n.alive}
        for ref, name in list(pending.items()):
            rec = self.matrix.cells[name]
            if rec.attempts and rec.attempts[-1].ended_utc is None:
                if rec.attempts[-1].node_id in alive:
                    continue  # running now
                self.log.lost(name, f"node {rec.attempts[-1].node} died during the cell; Ray runs it again")
            why = why_unplaceable(self.matrix.plan.cell(name), nodes)
            if why is not None:
                self.ray.cancel(ref, force=True)
                del pending[ref]
                self.log.failed(name, f"{why} (no alive node can run it now)")

