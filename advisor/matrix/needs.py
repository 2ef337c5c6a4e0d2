"""What a cell needs against what a node has: this machine, or the nodes of a Ray cluster.

A node is described the way Ray describes it (`ray.nodes()`: total resources and labels), and this
machine is described the same way (`local_node()`), so one check serves both: `why_unplaceable(cell,
nodes)` is None when some node can run the cell, else one line that names the missing resource.
A cell that no node can ever run fails at once with that line instead of waiting forever.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from adapters.gpus import list_gpus
from advisor.matrix.plan import Cell

_EPS = 1e-9


@dataclass(frozen=True)
class NodeView:
    node_id: str
    address: str
    alive: bool = True
    resources: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def short(self) -> str:
        return f"{self.node_id[:8]} ({self.address})"


def nodes_from_ray(raw: list[dict[str, Any]]) -> list[NodeView]:
    """`ray.nodes()` entries as NodeViews."""
    return [NodeView(n["NodeID"], str(n.get("NodeManagerAddress", "?")), bool(n.get("Alive")),
                     {k: float(v) for k, v in (n.get("Resources") or {}).items()}, dict(n.get("Labels") or {}))
            for n in raw]


def local_node() -> NodeView:
    """This machine as a node: its CPUs, memory and NVIDIA GPUs (with their accelerator types)."""
    import psutil

    resources: dict[str, float] = {"CPU": float(len(os.sched_getaffinity(0))),
                                   "memory": float(psutil.virtual_memory().total)}
    names = _gpu_names()
    if names:
        resources["GPU"] = float(len(names))
        for name in names:  # "NVIDIA H100 80GB HBM3" gives accelerator_type:H100 (and its other words)
            for word in name.split():
                if word.upper() not in ("NVIDIA", "TESLA", "GEFORCE", "RTX"):
                    resources[f"accelerator_type:{word}"] = 1.0
    return NodeView("local", "this machine", True, resources)


def _gpu_names() -> list[str]:
    return [g.name for g in list_gpus()]


def fits(cell: Cell, node: NodeView) -> bool:
    """Could `node` ever run `cell` (when it is idle)?"""
    return node.alive and all(node.resources.get(k, 0.0) + _EPS >= v for k, v in cell.requirement().items()) \
        and all(label_matches(node.labels.get(k), sel) for k, sel in cell.labels.items())


def label_matches(value: str | None, selector: str) -> bool:
    """Ray's label selector syntax: `v`, `!v`, `in(a,b)`, `!in(a,b)`."""
    negate = selector.startswith("!")
    sel = selector[1:] if negate else selector
    m = re.fullmatch(r"in\((.*)\)", sel)
    allowed = {s.strip() for s in m.group(1).split(",")} if m else {sel}
    hit = value is not None and value in allowed
    return not hit if negate else hit


def why_unplaceable(cell: Cell, nodes: list[NodeView]) -> str | None:
    """None if some alive node can run the cell, else one line naming what is missing."""
    alive = [n for n in nodes if n.alive]
    if any(fits(cell, n) for n in alive):
        return None
    req = cell.requirement()
    for key, amount in req.items():
        most = max((n.resources.get(key, 0.0) for n in alive), default=0.0)
        if most + _EPS < amount:
            if len(alive) == 1:
                have = f"{alive[0].address} has {'only ' + f'{most:g}' if most > 0 else 'none'}"
            else:
                have = "no node has it" + (f" (the most one has is {most:g})" if most > 0 else "")
            return f"cell '{cell.name}' needs {_show(key, amount)} but {have}; {_offer(alive)}"
    for key, sel in cell.labels.items():
        if not any(label_matches(n.labels.get(key), sel) for n in alive):
            seen = sorted({n.labels[key] for n in alive if key in n.labels})
            return (f"cell '{cell.name}' needs node label {key}={sel} but no node carries it "
                    f"({key} is {', '.join(seen) if seen else 'on no node'})")
    return (f"cell '{cell.name}' needs {', '.join(_show(k, v) for k, v in req.items())}"
            f"{' and labels ' + str(cell.labels) if cell.labels else ''} on one node, but no single node has all "
            f"of them; {_offer(alive)}")


def _show(key: str, amount: float) -> str:
    if key.startswith("accelerator_type:"):
        return f"accelerator {key.split(':', 1)[1]}"
    if key == "memory":
        return f"memory {amount / 2**30:.1f} GiB"
    return f"{key}: {amount:g}"


def _offer(alive: list[NodeView]) -> str:
    if not alive:
        return "no node is alive"
    names = sorted({k for n in alive for k in n.resources if not k.startswith("node:") and k != "object_store_memory"})
    return f"resources there: {', '.join(names) or 'none'}"
