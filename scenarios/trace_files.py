"""Readers for public LLM traffic traces: Azure CSV and Mooncake JSONL, plain or gzip.

Both become one `Trace`: arrival times in seconds from the first request,
input/output token lengths and (Mooncake only) the prompt's 512-token block
hash ids. A bad row raises `ScenarioError` naming the file, line and problem.
Written by hand (csv/json from the standard library) so every error can name
its line; parsed traces are cached per (path, size, mtime). The Azure traces
ship with the package (`scenarios/traces/*.csv.gz`, credits in its README).
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Literal

from scenarios.errors import ScenarioError
from scenarios.files import text_lines

TraceFormat = Literal["azure", "mooncake"]
TRACES_ENV = "ADVISOR_TRACES"
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
SHIPPED_TRACES = Path(__file__).resolve().parent / "traces"  # package data: the Azure traces, the Mooncake sample


@dataclass(frozen=True)
class Trace:
    path: str
    format: TraceFormat
    t_s: tuple[float, ...]  # arrival offsets from the first request, non-decreasing
    n_in: tuple[int, ...]
    n_out: tuple[int, ...]
    hash_ids: tuple[tuple[int, ...], ...]  # per request; empty tuples for Azure

    def __len__(self) -> int:
        return len(self.t_s)

    @property
    def duration_s(self) -> float:
        return self.t_s[-1] if self.t_s else 0.0

    @property
    def rate_rps(self) -> float:
        """Mean request rate over the trace (requests per second of trace time)."""
        return (len(self) - 1) / self.duration_s if self.duration_s > 0 else 0.0


def format_for(path: str | Path) -> TraceFormat:
    """Trace format from the file name: .csv is Azure, .jsonl/.json is Mooncake (each also with .gz)."""
    name = Path(path).name.lower().removesuffix(".gz")
    suffix = Path(name).suffix
    if suffix == ".csv":
        return "azure"
    if suffix in (".jsonl", ".json"):
        return "mooncake"
    raise ScenarioError(f"trace {path}: cannot tell the format from '{suffix}'; "
                        "name it .csv (Azure) or .jsonl (Mooncake), optionally .gz, or set `format:` in the scenario")


def find_trace(file: str, base_dir: Path | None) -> Path:
    """Locate a trace file: absolute path, else $ADVISOR_TRACES folders, else beside the scenario YAML
    (or in `traces/` there), else the traces shipped with the package.

    In each folder the name is tried as given, then with `.gz` added or removed, so a YAML that names
    `AzureLLMInferenceTrace_code.csv` finds the shipped `AzureLLMInferenceTrace_code.csv.gz`.
    """
    p = Path(file).expanduser()
    if p.is_absolute():
        if p.is_file():
            return p
        raise ScenarioError(f"trace file {p} does not exist; fix the path in the scenario")
    dirs = [Path(d) for d in os.environ.get(TRACES_ENV, "").split(os.pathsep) if d]
    if base_dir is not None:
        dirs += [base_dir, base_dir / "traces"]
    dirs.append(SHIPPED_TRACES)
    alt = Path(file[:-3]) if file.endswith(".gz") else Path(file + ".gz")
    for d in dirs:
        for name in (p, alt):
            if (d / name).is_file():
                return d / name
    looked = ", ".join(str(d) for d in dirs)
    raise ScenarioError(f"trace file '{file}' not found (looked in: {looked}); set {TRACES_ENV} to the folder "
                        "that holds it, or put it beside the scenario YAML")


def read_trace(path: str | Path, fmt: TraceFormat | None = None) -> Trace:
    """Read an Azure CSV or Mooncake JSONL trace (cached while the file is unchanged)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise ScenarioError(f"cannot read trace {p}: {e.strerror}; check the path") from None
    return _read_cached(str(p.resolve()), fmt or format_for(p), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=16)
def _read_cached(path: str, fmt: TraceFormat, _size: int, _mtime_ns: int) -> Trace:
    rows = _read_azure(path) if fmt == "azure" else _read_mooncake(path)
    if not rows:
        raise ScenarioError(f"trace {path} has no requests; give a trace with at least one row")
    t0 = rows[0][0]
    return Trace(path=path, format=fmt, t_s=tuple(r[0] - t0 for r in rows), n_in=tuple(r[1] for r in rows),
                 n_out=tuple(r[2] for r in rows), hash_ids=tuple(r[3] for r in rows))


_Row = tuple[float, int, int, tuple[int, ...]]


def _bad(path: str, line: int, what: str) -> ScenarioError:
    return ScenarioError(f"trace {path}, line {line}: {what}")


def _count(path: str, line: int, name: str, raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise _bad(path, line, f"{name} must be a positive integer, got {raw!r}")
    try:
        v = int(raw)
    except ValueError:
        raise _bad(path, line, f"{name} must be a positive integer, got {raw!r}") from None
    if v < 1:
        raise _bad(path, line, f"{name} must be >= 1, got {v}")
    return v


def _azure_time(path: str, line: int, raw: str) -> float:
    # 7 fractional digits ("2023-11-16 18:17:03.9799600"): more than datetime parses, so split them off
    base, _, frac = raw.strip().partition(".")
    try:
        t = datetime.fromisoformat(base).replace(tzinfo=UTC).timestamp()
        if frac:
            if not frac.isdigit():
                raise ValueError
            t += int(frac) / 10 ** len(frac)
    except ValueError:
        raise _bad(path, line, f"TIMESTAMP must look like '2023-11-16 18:17:03.9799600', got {raw!r}") from None
    return t


def _read_azure(path: str) -> list[_Row]:
    rows: list[_Row] = []
    lines = text_lines(path, "trace")
    reader = csv.reader(text for _, text in lines)
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header) != AZURE_COLUMNS:
        raise _bad(path, 1, f"header must be {','.join(AZURE_COLUMNS)}, got {header!r}")
    for rec in reader:
        line = reader.line_num
        if not rec:
            continue
        if len(rec) != 3:
            raise _bad(path, line, f"expected 3 columns {','.join(AZURE_COLUMNS)}, got {len(rec)}")
        t = _azure_time(path, line, rec[0])
        if rows and t < rows[-1][0]:
            raise _bad(path, line, "TIMESTAMP goes backwards; sort the trace by time")
        rows.append((t, _count(path, line, "ContextTokens", rec[1].strip()),
                     _count(path, line, "GeneratedTokens", rec[2].strip()), ()))
    return rows


def _read_mooncake(path: str) -> list[_Row]:
    rows: list[_Row] = []
    for line, text in text_lines(path, "trace"):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise _bad(path, line, f"not valid JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise _bad(path, line, "expected a JSON object")
        missing = [k for k in ("timestamp", "input_length", "output_length") if k not in obj]
        if missing:
            raise _bad(path, line, f"missing {', '.join(missing)}")
        ts = obj["timestamp"]
        if isinstance(ts, bool) or not isinstance(ts, int | float) or ts < 0:
            raise _bad(path, line, f"timestamp must be milliseconds >= 0, got {ts!r}")
        t = float(ts) / 1000.0
        if rows and t < rows[-1][0]:
            raise _bad(path, line, "timestamp goes backwards; sort the trace by time")
        hashes = obj.get("hash_ids", [])
        if not isinstance(hashes, list) or any(isinstance(h, bool) or not isinstance(h, int) or h < 0
                                               for h in hashes):
            raise _bad(path, line, f"hash_ids must be a list of integers >= 0, got {hashes!r}")
        rows.append((t, _count(path, line, "input_length", obj["input_length"]),
                     _count(path, line, "output_length", obj["output_length"]), tuple(hashes)))
    return rows
