"""Stream the rows of a request log (JSONL or CSV, plain or gzip) as numbers, one row at a time.

A row becomes a `LogRow`: arrival time (raw, see `timestamps`), input and
output token counts (None when the row has no usage, e.g. a failed
request), and the optional session id, model, latency and prefix block
hashes. Only the fields a role names are looked at: prompt and completion
text is never copied out of a row. Every problem is a `ScenarioError` that
names the file and line and says what to fix.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scenarios.errors import ScenarioError
from scenarios.files import text_lines
from scenarios.fit.fields import REQUIRED, ROLES, FieldMap, Role, normalise
from scenarios.fit.timestamps import TimeError, TimeKind, parse_time
from scenarios.overrides import MAX_TOKENS

LogFormat = Literal["auto", "csv", "jsonl"]
LOG_FORMATS: tuple[str, ...] = ("auto", "csv", "jsonl")


@dataclass(frozen=True, slots=True)
class LogRow:
    line: int
    t: float  # raw: epoch seconds for ISO text, else the number as written
    t_kind: TimeKind
    n_in: int | None
    n_out: int | None
    session: str | None = None
    model: str | None = None
    latency: float | None = None  # seconds, or raw time units when it came from an `end` timestamp
    prefix: tuple[int, ...] | None = None
    cached: int | None = None


@dataclass
class LogFile:
    """What was learnt about one log while reading it (filled in as rows stream)."""

    path: Path
    kind: Literal["csv", "jsonl"]
    layout: str = ""  # e.g. "Azure CSV", "BurstGPT CSV", "Mooncake JSONL", "OpenAI-style JSONL"
    relative_unit: str = "s"  # unit of small numeric timestamps in this layout
    fields: dict[str, str] | None = None  # role -> field / column name actually used
    latency_from_end: bool = False  # latency is end - time, in raw time units


MAX_TIME_VALUE = 1e20  # past any epoch in nanoseconds (1.7e18 today): a larger stamp is a typo, or would overflow


def _bad(path: Path, line: int, what: str) -> ScenarioError:
    return ScenarioError(f"log {path}, line {line}: {what}")


def _count(path: Path, line: int, role: str, raw: Any) -> int | None:
    """A token count: an integer >= 0 (None when the row has none)."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, bool):
        raise _bad(path, line, f"{role} token count must be an integer >= 0, got {raw!r}")
    if isinstance(raw, str):
        try:
            raw = int(raw)
        except ValueError:
            try:
                raw = float(raw)
            except ValueError:
                raise _bad(path, line, f"{role} token count must be an integer >= 0, got {raw!r}") from None
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise _bad(path, line, f"{role} token count must be finite, got {raw!r}")
        if raw != int(raw):
            raise _bad(path, line, f"{role} token count must be a whole number, got {raw!r}")
        raw = int(raw)
    if not isinstance(raw, int):
        raise _bad(path, line, f"{role} token count must be an integer >= 0, got {raw!r}")
    if raw < 0:
        raise _bad(path, line, f"{role} token count must be >= 0, got {raw}")
    if raw > MAX_TOKENS:  # a finite but absurd count is refused like inf, not left to overflow the sums
        raise _bad(path, line, f"{role} token count must be at most {MAX_TOKENS:,}, got {raw:.4g}")
    return raw


def _seconds(path: Path, line: int, role: str, raw: Any, scale: float) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        v = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        v = math.nan
    if not math.isfinite(v) or v < 0 or v > MAX_TIME_VALUE:
        raise _bad(path, line, f"{role} must be a number from 0 to {MAX_TIME_VALUE:g}, got {raw!r}")
    return v * scale


def _prefix(path: Path, line: int, raw: Any) -> tuple[int, ...] | None:
    if raw is None:
        return None
    if isinstance(raw, str):  # CSV: space- or comma-separated ids in one cell
        raw = [x for x in raw.replace(",", " ").split()]
    if not isinstance(raw, list):
        raise _bad(path, line, f"prefix hash ids must be a list of integers >= 0, got {raw!r}")
    try:
        ids = tuple(int(x) for x in raw if not isinstance(x, bool))
    except (TypeError, ValueError):
        ids = ()
    if len(ids) != len(raw) or any(x < 0 for x in ids):
        raise _bad(path, line, f"prefix hash ids must be a list of integers >= 0, got {raw!r}")
    return ids


def _time(path: Path, line: int, raw: Any) -> tuple[float, TimeKind]:
    try:
        return parse_time(raw)
    except TimeError as e:
        raise _bad(path, line, str(e)) from None


def detect_kind(path: Path, fmt: LogFormat) -> Literal["csv", "jsonl"]:
    """csv or jsonl: from --format, else the extension (.csv/.tsv, .jsonl/.json/.ndjson, also .gz), else content."""
    if fmt != "auto":
        return fmt
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".csv", ".tsv")):
        return "csv"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    for _, text in text_lines(path, "log"):
        if text.strip():
            return "jsonl" if text.lstrip().startswith("{") else "csv"
    return "csv"


def read_rows(info: LogFile, fields: FieldMap) -> Iterator[LogRow]:
    """The rows of one log file, in file order."""
    return _read_jsonl(info, fields) if info.kind == "jsonl" else _read_csv(info, fields)


# ---- JSONL ------------------------------------------------------------------------------------------

def _get(obj: dict[str, Any], path: tuple[str, ...]) -> Any:
    if len(path) == 1:
        return obj.get(path[0], _MISSING)
    cur: Any = obj
    for key in path:
        if not isinstance(cur, dict) or key not in cur:
            return _MISSING
        cur = cur[key]
    return cur


_MISSING = object()


_SEARCH_ROWS = 1000  # rows without usage (failed requests) tolerated before the counts' fields must show up


def _read_jsonl(info: LogFile, fields: FieldMap) -> Iterator[LogRow]:
    path = info.path
    candidates = {r: [tuple(n.split(".")) for n in fields.json_names(r)] for r in ROLES}
    chosen: dict[Role, tuple[str, ...]] = {}
    first_line = 0
    n_rows = 0
    for line, text in text_lines(path, "log"):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise _bad(path, line, f"not valid JSON ({e.msg}); a JSONL log has one JSON object per line") from None
        if not isinstance(obj, dict):
            raise _bad(path, line, f"expected a JSON object, got {type(obj).__name__}")
        vals: dict[str, Any] = dict.fromkeys(ROLES)
        searching = n_rows < _SEARCH_ROWS or any(r not in chosen for r in REQUIRED)
        for role in ROLES if searching else chosen:
            path_ = chosen.get(role)
            if path_ is not None:
                v = _get(obj, path_)
            else:  # fields not seen in the first rows are not looked for again (a log keeps its fields)
                v = _MISSING
                for cand in candidates[role]:
                    v = _get(obj, cand)
                    if v is not _MISSING:
                        chosen[role] = cand
                        break
            if v is not _MISSING:
                vals[role] = v
        n_rows += 1
        if n_rows == 1:
            first_line = line
        if info.fields is None:
            if "time" not in chosen or n_rows >= _SEARCH_ROWS:
                _check_first(info, chosen, fields, first_line, "json")
            if all(r in chosen for r in REQUIRED):
                _settle_jsonl(info, chosen)
        if vals["time"] is None:
            raise _bad(path, line, f"no timestamp (looked for {fields.looked_for('time', 'json')}); "
                                   "give the field with --field time=NAME")
        yield _row(info, line, vals)
    if n_rows == 0:
        raise ScenarioError(f"log {path} is empty; give a log with at least two requests")
    if info.fields is None:
        _check_first(info, chosen, fields, first_line, "json")
    info.fields = {r: ".".join(p) for r, p in chosen.items()}  # optional fields found after the first rows too


def _settle_jsonl(info: LogFile, chosen: dict[Role, tuple[str, ...]]) -> None:
    info.fields = {r: ".".join(p) for r, p in chosen.items()}
    info.latency_from_end = "end" in chosen and "latency_s" not in chosen and "latency_ms" not in chosen
    mooncake = chosen["input"] == ("input_length",)
    info.layout = "Mooncake JSONL" if mooncake else \
        "OpenAI-style JSONL" if chosen["input"][0] in ("usage", "response") else "JSONL"
    info.relative_unit = "ms" if mooncake else "s"


def _check_first(info: LogFile, chosen: dict[Role, Any], fields: FieldMap, line: int,
                 kind: Literal["json", "csv"]) -> None:
    missing = [r for r in REQUIRED if r not in chosen]
    if missing:
        what = "field" if kind == "json" else "column"
        r = missing[0]
        raise _bad(info.path, line, f"no {_ROLE_WORDS[r]} {what} (looked for {fields.looked_for(r, kind)}); "
                                    f"name it with --field {r}=NAME")


_ROLE_WORDS = {"time": "timestamp", "input": "input token count", "output": "output token count"}


def _row(info: LogFile, line: int, v: dict[str, Any]) -> LogRow:
    path = info.path
    t, kind = _time(path, line, v["time"])
    latency = _seconds(path, line, "latency_s", v["latency_s"], 1.0)
    if latency is None:
        latency = _seconds(path, line, "latency_ms", v["latency_ms"], 1e-3)
    if latency is None and info.latency_from_end and v["end"] is not None:
        end, end_kind = _time(path, line, v["end"])
        if end_kind != kind or end < t:
            raise _bad(path, line, f"end time {v['end']!r} is not a time after the start {v['time']!r}")
        latency = end - t
    session = v["session"]
    model = v["model"]
    return LogRow(line, t, kind, _count(path, line, "input", v["input"]), _count(path, line, "output", v["output"]),
                  None if session is None or session == "" else str(session),
                  None if model is None or model == "" else str(model), latency, _prefix(path, line, v["prefix"]),
                  _count(path, line, "cached", v["cached"]))


# ---- CSV ---------------------------------------------------------------------------------------------

def _read_csv(info: LogFile, fields: FieldMap) -> Iterator[LogRow]:
    path = info.path
    lines = text_lines(path, "log")
    numbered: list[int] = [0]

    def texts() -> Iterator[str]:
        for n, text in lines:
            numbered[0] = n
            yield text

    delimiter = "\t" if path.name.lower().removesuffix(".gz").endswith(".tsv") else ","
    reader = csv.reader(texts(), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise ScenarioError(f"log {path} is empty; give a log with a header line and at least two requests") from None
    except csv.Error as e:
        raise _bad(path, numbered[0], f"not valid CSV ({e})") from None
    index = {normalise(h): i for i, h in enumerate(header)}
    chosen: dict[Role, int] = {}
    for role in ROLES:
        for name in fields.csv_names(role):
            if normalise(name) in index:
                chosen[role] = index[normalise(name)]
                break
    _check_first(info, chosen, fields, numbered[0], "csv")
    info.fields = {r: header[i] for r, i in chosen.items()}
    info.latency_from_end = "end" in chosen and "latency_s" not in chosen and "latency_ms" not in chosen
    cols = {normalise(header[i]) for i in chosen.values()}
    info.layout = "Azure CSV" if {"contexttokens", "generatedtokens"} <= cols else \
        "BurstGPT CSV" if {"requesttokens", "responsetokens"} <= cols else "CSV"
    info.relative_unit = "s"
    n_cols = len(header)
    n_rows = 0
    while True:
        try:
            rec = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            raise _bad(path, numbered[0], f"not valid CSV ({e})") from None
        line = numbered[0]
        if not rec or (len(rec) == 1 and not rec[0].strip()):
            continue
        if len(rec) != n_cols:
            raise _bad(path, line, f"expected {n_cols} columns like the header, got {len(rec)}")
        vals = {role: (rec[chosen[role]].strip() if role in chosen else None) for role in ROLES}
        if not vals["time"]:
            raise _bad(path, line, f"empty timestamp in column {info.fields['time']!r}")
        n_rows += 1
        yield _row(info, line, vals)
    if n_rows == 0:
        raise ScenarioError(f"log {path} has a header but no rows; give a log with at least two requests")
