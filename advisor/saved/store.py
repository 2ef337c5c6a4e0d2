"""Saved runs: `runs/<run-id>/result.json` plus the per-request records in `requests.parquet`.

`result.json` is the source of truth every consumer (console, report,
dashboard, recommender) renders; `RunResult` loads both files back into the
same objects they were saved from.
"""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field

from adapters.base import EngineInfo
from advisor.loadgen.info import LoadgenInfo
from advisor.loadgen.records import RequestRecord
from advisor.metrics.summary import RunSummary
from advisor.metrics.verdict import Verdict
from advisor.run.schedule import RunSchedule
from advisor.saved.atomic import staged_folder, write_atomic
from advisor.saved.redact import redact_text
from advisor.telemetry.record import TelemetrySummary
from fileform import OWN_FORM, FileForm, FormError
from scenarios.types import SLOs

SCHEMA = "advisor.run/1"
RESULT_FILE = "result.json"
RECORDS_FILE = "requests.parquet"

_ARROW = {int: pa.int64(), str: pa.string(), bool: pa.bool_(), "int32": pa.int32()}


def _arrow_type(f: dataclasses.Field) -> pa.DataType:
    """A RequestRecord field's Parquet column type, from its annotation (X | None is X, nullable)."""
    hint = typing.get_type_hints(RequestRecord)[f.name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is list:
        return pa.list_(_ARROW[f.metadata.get("parquet", args[0])])
    base = args[0] if args else hint
    return _ARROW[f.metadata.get("parquet", base)]


# requests.parquet's columns: RequestRecord's fields, in their order, typed from their annotations
_RECORD_SCHEMA = pa.schema([(f.name, _arrow_type(f)) for f in dataclasses.fields(RequestRecord)])
class RunNotSaved(RuntimeError):
    """The run was measured but could not be written (a full disk); `result` holds it all, `path` is None."""

    def __init__(self, result: RunResult, folder: Path, files: tuple[str, ...], error: OSError) -> None:
        why = error.strerror or str(error)
        super().__init__(f"the run could not be saved: {why} writing {folder} ({', '.join(files)} not written; "
                         "nothing of it was left behind); free space under --out or choose another, and re-run")
        self.result = result


class StoreError(ValueError):
    """A run folder that cannot be read; the message names the path and the fix."""


@dataclass
class RunResult(FileForm):
    """result.json, typed: its fields are the file's keys (after "schema"), each section validated on load
    (fileform); `path` and the records are where it was read from, not part of the file."""

    run_id: str
    created_utc: str
    scenario: dict[str, Any]
    schedule: Annotated[RunSchedule, OWN_FORM]  # its to_dict writes the file's shapes for "none"
    slos: SLOs
    engine: EngineInfo
    manifest: dict[str, Any]
    summary: RunSummary
    telemetry: TelemetrySummary
    verdict: Verdict
    loadgen: LoadgenInfo = field(default_factory=LoadgenInfo)
    quality: dict[str, Any] | None = None  # a verify result the run carries ({"token_agreement": x}); rarely set
    path: Annotated[Path | None, Field(exclude=True)] = None
    _records: Annotated[list[RequestRecord] | None, Field(exclude=True)] = field(default=None, repr=False)

    @property
    def scenario_name(self) -> str | None:
        """The scenario's name; `scenario` itself stays the scenario document as run (its schema is the
        scenario YAML's, which may change: re-validating an old run against it could refuse the run)."""
        name = self.scenario.get("name")
        return None if name is None else str(name)

    def to_dict(self) -> dict[str, Any]:
        """result.json: the one place the typed record becomes JSON (`quality` only when the run has one)."""
        d = super().to_dict()
        if d["quality"] is None:
            del d["quality"]
        return {"schema": SCHEMA, **d}

    @classmethod
    def from_dict(cls, d: Any, path: Path | None = None) -> RunResult:
        """A result.json's object, every section typed; StoreError naming what is damaged."""
        where = path or "result"
        if not isinstance(d, dict) or d.get("schema") != SCHEMA:
            schema = d.get("schema") if isinstance(d, dict) else None
            raise StoreError(f"{where}: not an advisor run (schema {schema!r}, expected {SCHEMA!r})")
        try:
            run = super().from_dict(d)
        except FormError as e:
            raise StoreError(f"{where}: {e}; the file is damaged, re-run the benchmark") from None
        run.path = path
        return run

    @classmethod
    def upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        """A summary that does not say its mode (hand-made runs) has the schedule's."""
        summary, schedule = d.get("summary"), d.get("schedule")
        if isinstance(summary, dict) and "mode" not in summary and isinstance(schedule, dict):
            return {**d, "summary": {"mode": schedule.get("mode"), **summary}}
        return d

    def records(self) -> list[RequestRecord]:
        """The per-request records, read from the run folder on first use."""
        if self._records is None:
            if self.path is None:
                raise StoreError(f"run {self.run_id} has no folder to read records from")
            self._records = read_records(self.path / RECORDS_FILE)
        return self._records

    def save(self, root: Path, records: list[RequestRecord] | None = None,
             extra_files: dict[str, Path] | None = None) -> Path:
        """Save to root/<run_id>/ exactly once, atomically (advisor.saved.atomic): a new run folder appears whole or
        not at all (a failed save removes its debris); a re-save of an existing one replaces result.json.
        `extra_files`: name in the folder -> file copied there (a launched server's log)."""
        folder = Path(root) / self.run_id
        text = redact_text(json.dumps(self.to_dict(), indent=1, allow_nan=False))
        if folder.is_dir():
            if records is not None:
                write_records(folder / RECORDS_FILE, records)
            write_atomic(folder / RESULT_FILE, text)
        else:
            with staged_folder(folder) as tmp:
                if records is not None:
                    write_records(tmp / RECORDS_FILE, records)
                for name, src in (extra_files or {}).items():
                    write_atomic(tmp / name, redact_text(Path(src).read_text(errors="replace")))
                write_atomic(tmp / RESULT_FILE, text)
        if records is not None:
            self._records = records
        self.path = folder
        return folder

    @property
    def files(self) -> tuple[str, ...]:
        """What a saved run folder holds."""
        return (RECORDS_FILE, RESULT_FILE)


def new_run_id(scenario: str, engine: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{scenario}-{engine}")[:60].strip("-")
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{slug}-{secrets.token_hex(2)}"


def write_records(path: Path, records: list[RequestRecord]) -> None:
    """The records as Parquet, written atomically (a temporary name in the same folder, removed if it fails)."""
    cols: dict[str, list[Any]] = {name: [] for name in _RECORD_SCHEMA.names}
    for r in records:
        for name in _RECORD_SCHEMA.names:
            cols[name].append(getattr(r, name))
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pydict(cols, schema=_RECORD_SCHEMA), sink, compression="zstd")
    write_atomic(Path(path), sink.getvalue().to_pybytes())


def read_records(path: Path) -> list[RequestRecord]:
    if not path.exists():
        raise StoreError(f"{path}: missing per-request records; the run folder is incomplete, re-run the benchmark")
    try:
        rows = pq.read_table(path).to_pylist()  # older runs lack the newer columns: from_dict defaults them
        return [RequestRecord.from_dict(d) for d in rows]
    except (pa.ArrowException, OSError, TypeError, ValueError) as e:
        raise StoreError(f"{path}: the per-request records cannot be read ({type(e).__name__}: {e}); the file is "
                         "damaged, re-run the benchmark") from None


def item_folder(path_or_id: str | Path, root: Path = Path("runs")) -> Path:
    """The folder a run or sweep is named by: a folder, a file in it (result.json, sweep.json), or an id
    under `root`. The one lookup every command uses (the folder may not exist: callers say what they missed)."""
    p = Path(path_or_id)
    if p.is_file():
        return p.parent
    return p if p.is_dir() else Path(root) / str(path_or_id)


def load_run(path_or_id: str | Path, root: Path = Path("runs")) -> RunResult:
    """A run by folder, by result.json path, or by id under `root`."""
    p = item_folder(path_or_id, root)
    f = p / RESULT_FILE
    if not f.is_file():
        raise StoreError(f"no run at {path_or_id} (looked for {f}); list runs with `ls {root}`")
    try:
        d = json.loads(f.read_text())
    except json.JSONDecodeError as e:
        raise StoreError(f"{f}: not valid JSON ({e}); the file is damaged, re-run the benchmark") from None
    return RunResult.from_dict(d, path=p)


def list_runs(root: Path = Path("runs"), skipped: list[tuple[Path, str]] | None = None) -> list[RunResult]:
    """Every readable run under `root`, oldest first; a damaged one goes to `skipped` (folder, reason)."""
    out = []
    for f in sorted(Path(root).glob(f"*/{RESULT_FILE}")):
        try:
            out.append(load_run(f.parent))
        except StoreError as e:
            if skipped is not None:
                skipped.append((f.parent, str(e)))
    return sorted(out, key=lambda r: r.created_utc)


def check_records(folder: Path) -> None:
    """Cheap check that a run's records file is whole (its footer reads); StoreError if not."""
    path = folder / RECORDS_FILE
    if not path.exists():
        raise StoreError(f"{path}: missing per-request records; the run folder is incomplete, re-run the benchmark")
    try:
        pq.read_metadata(path)
    except (pa.ArrowException, OSError) as e:
        raise StoreError(f"{path}: the per-request records cannot be read ({type(e).__name__}: {e}); the file is "
                         "damaged, re-run the benchmark") from None


def readable_runs(root: Path, warn: Callable[[str], None]) -> list[RunResult]:
    """`list_runs` with records checked too, and one `warn(line)` per skipped run naming it and why."""
    skipped: list[tuple[Path, str]] = []
    ok = []
    for r in list_runs(root, skipped):
        try:
            check_records(r.path or Path(root) / r.run_id)
        except StoreError as e:
            skipped.append((r.path or Path(r.run_id), str(e)))
            continue
        ok.append(r)
    for folder, why in skipped:
        warn(skip_warning(folder, why))
    return ok


def skip_warning(folder: Path, why: str) -> str:
    return f"warning: skipped run {Path(folder).name}: {why}"


def unfinished(roots: Any) -> list[Path]:
    """Unfinished run or sweep folders under each of `roots` (advisor.saved.atomic.unfinished), each once."""
    from advisor.saved.atomic import unfinished as under

    return sorted({f for root in roots for f in under(Path(root))})
