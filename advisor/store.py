"""Saved runs: `runs/<run-id>/result.json` plus the per-request records in `requests.parquet`.

`result.json` is the source of truth every consumer (console, report,
dashboard, recommender) renders; `RunResult` loads both files back into the
same objects they were saved from.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from advisor.records import RequestRecord

SCHEMA = "advisor.run/1"
RESULT_FILE = "result.json"
RECORDS_FILE = "requests.parquet"

_RECORD_SCHEMA = pa.schema([
    ("idx", pa.int64()), ("request_id", pa.string()), ("t_sched_ns", pa.int64()), ("t_send_ns", pa.int64()),
    ("chunk_t_ns", pa.list_(pa.int64())), ("chunk_tokens", pa.list_(pa.int32())),
    ("n_in", pa.int64()), ("n_in_client", pa.int64()), ("n_out", pa.int64()), ("n_out_client", pa.int64()),
    ("max_tokens", pa.int64()), ("warmup", pa.bool_()), ("error_kind", pa.string()), ("error", pa.string()),
])


class StoreError(ValueError):
    """A run folder that cannot be read; the message names the path and the fix."""


@dataclass
class RunResult:
    run_id: str
    created_utc: str
    scenario: dict[str, Any]
    schedule: dict[str, Any]
    slos: dict[str, Any]
    engine: dict[str, Any]
    manifest: dict[str, Any]
    summary: dict[str, Any]
    telemetry: dict[str, Any]
    verdict: dict[str, Any]
    loadgen: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    _records: list[RequestRecord] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "run_id": self.run_id, "created_utc": self.created_utc,
                "scenario": self.scenario, "schedule": self.schedule, "slos": self.slos, "engine": self.engine,
                "manifest": self.manifest, "summary": self.summary, "telemetry": self.telemetry,
                "verdict": self.verdict, "loadgen": self.loadgen}

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None = None) -> RunResult:
        if d.get("schema") != SCHEMA:
            raise StoreError(f"{path or 'result'}: not an advisor run (schema {d.get('schema')!r}, expected {SCHEMA!r})")
        keys = ("run_id", "created_utc", "scenario", "schedule", "slos", "engine", "manifest", "summary",
                "telemetry", "verdict")
        missing = [k for k in keys if k not in d]
        if missing:
            raise StoreError(f"{path or 'result'}: missing {', '.join(missing)}; the file is damaged, re-run the benchmark")
        return cls(**{k: d[k] for k in keys}, loadgen=d.get("loadgen", {}), path=path)

    def records(self) -> list[RequestRecord]:
        """The per-request records, read from the run folder on first use."""
        if self._records is None:
            if self.path is None:
                raise StoreError(f"run {self.run_id} has no folder to read records from")
            self._records = read_records(self.path / RECORDS_FILE)
        return self._records

    def save(self, root: Path, records: list[RequestRecord] | None = None) -> Path:
        folder = Path(root) / self.run_id
        folder.mkdir(parents=True, exist_ok=True)
        if records is not None:
            self._records = records
            write_records(folder / RECORDS_FILE, records)
        tmp = folder / (RESULT_FILE + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1, allow_nan=False))
        tmp.replace(folder / RESULT_FILE)  # atomic: a reader never sees half a file
        self.path = folder
        return folder


def new_run_id(scenario: str, engine: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{scenario}-{engine}")[:60].strip("-")
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{slug}-{secrets.token_hex(2)}"


def write_records(path: Path, records: list[RequestRecord]) -> None:
    cols: dict[str, list[Any]] = {name: [] for name in _RECORD_SCHEMA.names}
    for r in records:
        for name in _RECORD_SCHEMA.names:
            cols[name].append(getattr(r, name))
    pq.write_table(pa.Table.from_pydict(cols, schema=_RECORD_SCHEMA), path, compression="zstd")


def read_records(path: Path) -> list[RequestRecord]:
    if not path.exists():
        raise StoreError(f"{path}: missing per-request records; the run folder is incomplete, re-run the benchmark")
    return [RequestRecord.from_dict(d) for d in pq.read_table(path).to_pylist()]


def load_run(path_or_id: str | Path, root: Path = Path("runs")) -> RunResult:
    """A run by folder, by result.json path, or by id under `root`."""
    p = Path(path_or_id)
    if p.is_file():
        p = p.parent
    if not p.is_dir():
        p = Path(root) / str(path_or_id)
    f = p / RESULT_FILE
    if not f.is_file():
        raise StoreError(f"no run at {path_or_id} (looked for {f}); list runs with `ls {root}`")
    try:
        d = json.loads(f.read_text())
    except json.JSONDecodeError as e:
        raise StoreError(f"{f}: not valid JSON ({e}); the file is damaged, re-run the benchmark") from None
    return RunResult.from_dict(d, path=p)


def list_runs(root: Path = Path("runs")) -> list[RunResult]:
    """Every readable run under `root`, oldest first (sweep folders and damaged runs skipped)."""
    out = []
    for f in sorted(Path(root).glob(f"*/{RESULT_FILE}")):
        try:
            out.append(load_run(f.parent))
        except StoreError:
            continue
    return sorted(out, key=lambda r: r.created_utc)
