"""The matrix's own file, `runs/<matrix-id>/matrix.json`: the plan, each cell's state, node and run ids.

It is rewritten (atomically) at every change of a cell, so after a crash, Ctrl-C or SIGTERM it says which
cells finished, which failed and why, and which were interrupted; `--resume MATRIX_ID` reads it back and
runs only the cells that did not finish. The runs themselves are ordinary saved runs and sweeps beside it
(runs/<run-id>/, runs/<sweep-id>/), so report, recommend and the dashboard read them as they read any run.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from advisor.matrix.plan import Cell, Plan, PlanError, plan_from_dict
from advisor.saved.atomic import write_atomic
from advisor.saved.redact import redact_text
from fileform import FileForm, FormError

SCHEMA = "advisor.matrix/1"
MATRIX_FILE = "matrix.json"
CellState = Literal["pending", "running", "done", "failed", "interrupted"]


class MatrixStoreError(ValueError):
    """A matrix file that cannot be found or read; the message names the path and the fix."""


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class Attempt(FileForm):
    node_id: str
    node: str  # human-readable: short id and address
    started_utc: str
    ended_utc: str | None = None
    outcome: str | None = None  # done | failed | node died | interrupted
    error: str | None = None


@dataclass
class CellRecord(FileForm):
    name: str
    state: CellState = "pending"
    run_ids: list[str] = field(default_factory=list)
    sweep_id: str | None = None
    error: str | None = None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def node(self) -> str | None:
        return self.attempts[-1].node if self.attempts else None

    def to_dict(self) -> dict[str, Any]:
        """The fields, with the last attempt's node (not read back) after the state, where the file has it."""
        d = super().to_dict()
        return {"name": d.pop("name"), "state": d.pop("state"), "node": self.node, **d}


@dataclass
class MatrixFile:
    """The live record of one matrix; every mutation is followed by `save()`."""

    matrix_id: str
    root: Path
    plan: Plan
    backend: str  # "local" or "ray <address>"
    created_utc: str = field(default_factory=utc_now)
    state: str = "running"  # running | done | failed | interrupted
    cells: dict[str, CellRecord] = field(default_factory=dict)
    interrupted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for c in self.plan.cells:
            self.cells.setdefault(c.name, CellRecord(c.name))

    @property
    def folder(self) -> Path:
        return self.root / self.matrix_id

    @property
    def path(self) -> Path:
        return self.folder / MATRIX_FILE

    def to_dict(self) -> dict[str, Any]:  # hand-written: adds a fresh timestamp (updated_utc) at each save
        return {"schema": SCHEMA, "matrix_id": self.matrix_id, "created_utc": self.created_utc,
                "updated_utc": utc_now(), "backend": self.backend, "state": self.state,
                "plan": {"name": self.plan.name, "source": self.plan.source,
                         "cells": [c.model_dump(mode="json") for c in self.plan.cells]},
                "cells": [self.cells[c.name].to_dict() for c in self.plan.cells],
                "interrupted": self.interrupted, "notes": self.notes}

    def save(self) -> Path:
        text = redact_text(json.dumps(self.to_dict(), indent=1, allow_nan=False))  # no secret in any file
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, text)  # a reader never sees half a file
        return self.path

    def todo(self) -> list[Cell]:
        """The cells still to run, in plan order (everything but `done`)."""
        return [c for c in self.plan.cells if self.cells[c.name].state != "done"]

    def finish(self, interrupted: bool = False) -> None:
        states = {r.state for r in self.cells.values()}
        self.state = "interrupted" if interrupted or self.interrupted else ("failed" if states - {"done"} else "done")
        self.save()

    def close_open_attempts(self) -> None:
        """Before a resume: an attempt still open was cut off with its driver (a crash or kill -9)."""
        for rec in self.cells.values():
            if rec.attempts and rec.attempts[-1].ended_utc is None:
                a = rec.attempts[-1]
                a.ended_utc, a.outcome, a.error = utc_now(), "interrupted", "the driver stopped during the cell"
            if rec.state == "running":
                rec.state = "interrupted"


def new_matrix_id(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)[:50].strip("-") or "matrix"
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-matrix-{slug}-{secrets.token_hex(2)}"


def load_matrix(matrix_id: str, root: Path) -> MatrixFile:
    """A matrix by id under `root` (or by its folder); its recorded plan is validated again."""
    folder = Path(matrix_id) if Path(matrix_id).is_dir() else Path(root) / matrix_id
    path = folder / MATRIX_FILE
    if not path.is_file():
        raise MatrixStoreError(f"no matrix '{matrix_id}' (looked for {path}); the id is the folder name "
                               "`advisor matrix` printed, e.g. 20261122-101500-matrix-NAME-ab12")
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise MatrixStoreError(f"{path}: not valid JSON ({e}); the file is damaged") from None
    if d.get("schema") != SCHEMA:
        raise MatrixStoreError(f"{path}: not an advisor matrix (schema {d.get('schema')!r}, expected {SCHEMA!r})")
    try:
        plan = plan_from_dict({"name": d["plan"]["name"], "cells": d["plan"]["cells"]})
    except PlanError as e:
        raise PlanError([f"matrix {matrix_id}: {p}" for p in e.problems]) from None
    plan = plan.model_copy(update={"source": d["plan"].get("source", {})})
    try:
        cells = [CellRecord.from_dict(c) for c in d["cells"]]
    except FormError as e:
        raise MatrixStoreError(f"{path}: a cell's record is damaged ({e}); start the matrix again") from None
    m = MatrixFile(d["matrix_id"], folder.parent, plan, d.get("backend", "local"), d["created_utc"], d["state"],
                   {c.name: c for c in cells}, list(d.get("interrupted", [])), list(d.get("notes", [])))
    return m


def same_cells(a: Plan, b: Plan) -> str | None:
    """None when two plans have the same cells, else the first difference in words."""
    da = {c.name: c.model_dump(mode="json") for c in a.cells}
    db = {c.name: c.model_dump(mode="json") for c in b.cells}
    if set(da) != set(db):
        return f"cells {sorted(set(da) ^ set(db))} are in one plan and not the other"
    for name in da:
        if da[name] != db[name]:
            keys = sorted(k for k in da[name] if da[name][k] != db[name].get(k))
            return f"cell '{name}' differs in {', '.join(keys)}"
    return None
