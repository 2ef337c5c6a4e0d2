"""Request timestamps: ISO 8601 date-times or numbers, and the unit the numbers are in.

Each raw value becomes a float: seconds since the Unix epoch for ISO text
(UTC where no zone is given), or the number as written. The unit of numbers
is decided once the whole log is read: epoch-sized values tell it by their
magnitude (seconds, ms, us, ns since 1970); small values are offsets from
the start, in the layout's own unit (Mooncake: ms, others: seconds) unless
`--time-unit` says otherwise. `TimeBasis.statement` says what was decided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

TimeKind = Literal["iso", "number"]
TimeUnit = Literal["auto", "iso", "s", "ms", "us", "ns"]
TIME_UNITS: tuple[str, ...] = ("auto", "iso", "s", "ms", "us", "ns")
_PER_SECOND = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
# smallest epoch value per unit: 1973-03-03 (1e8 s); below that, numbers are offsets from the start
_EPOCH_FLOOR = (("ns", 1e17), ("us", 1e14), ("ms", 1e11), ("s", 1e8))


class TimeError(ValueError):
    """A timestamp that cannot be read; the caller adds the file and line."""


def parse_time(raw: object) -> tuple[float, TimeKind]:
    """(value, kind) of one raw timestamp: a JSON number, a numeric string or ISO 8601 text."""
    if isinstance(raw, bool) or raw is None:
        raise TimeError(f"timestamp must be a number or an ISO 8601 date-time, got {raw!r}")
    if isinstance(raw, int | float):
        v = float(raw)
        if not math.isfinite(v):
            raise TimeError(f"timestamp must be finite, got {raw!r}")
        return v, "number"
    if not isinstance(raw, str) or not raw.strip():
        raise TimeError(f"timestamp must be a number or an ISO 8601 date-time, got {raw!r}")
    text = raw.strip()
    try:
        v = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(v):
            raise TimeError(f"timestamp must be finite, got {raw!r}")
        return v, "number"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise TimeError(f"timestamp must be a number or an ISO 8601 date-time like '2023-11-16 18:17:03.979', "
                        f"got {raw!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp(), "iso"


@dataclass(frozen=True)
class TimeBasis:
    """How raw timestamp values become seconds."""

    unit: Literal["iso", "s", "ms", "us", "ns"]
    epoch: bool  # absolute time (ISO or epoch numbers) rather than offsets from the start
    statement: str  # what was read and decided, for the user

    @property
    def seconds_per_value(self) -> float:
        return 1.0 if self.unit == "iso" else 1.0 / _PER_SECOND[self.unit]


def decide_basis(kind: TimeKind, max_abs: float, wanted: TimeUnit, relative_default: str) -> TimeBasis:
    """The unit of a log's timestamps: from --time-unit, or detected from their kind and size."""
    if kind == "iso":
        if wanted not in ("auto", "iso"):
            raise TimeError(f"--time-unit {wanted} given, but the timestamps are ISO 8601 date-times; "
                            "drop --time-unit or give --time-unit iso")
        return TimeBasis("iso", True, "ISO 8601 date-times (UTC where no zone is given)")
    if wanted == "iso":
        raise TimeError("--time-unit iso given, but the timestamps are numbers; give s, ms, us or ns")
    if wanted != "auto":
        epoch = max_abs >= dict(_EPOCH_FLOOR)[wanted]
        where = "since 1970 (epoch)" if epoch else "from the start"
        return TimeBasis(wanted, epoch, f"numbers in {_unit_word(wanted)} {where} (as --time-unit says)")  # type: ignore[arg-type]
    for unit, floor in _EPOCH_FLOOR:
        if max_abs >= floor:
            return TimeBasis(unit, True, f"numbers read as {_unit_word(unit)} since 1970 (epoch), detected "  # type: ignore[arg-type]
                                         f"from their size (up to {max_abs:.4g}); --time-unit overrides")
    other = "s" if relative_default == "ms" else "ms"
    return TimeBasis(relative_default, False,  # type: ignore[arg-type]
                     f"numbers from the start (up to {max_abs:.4g}) read as {_unit_word(relative_default)}, "
                     f"the layout's unit; pass --time-unit {other} if they are {_unit_word(other)}")


def _unit_word(unit: str) -> str:
    return {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}[unit]


def describe_epoch(t0_s: float, t1_s: float) -> str:
    """'2023-11-16 18:15:00 - 19:14:59 UTC' for absolute times."""
    a = datetime.fromtimestamp(t0_s, UTC)
    b = datetime.fromtimestamp(t1_s, UTC)
    end = b.strftime("%H:%M:%S") if a.date() == b.date() else b.strftime("%Y-%m-%d %H:%M:%S")
    return f"{a.strftime('%Y-%m-%d %H:%M:%S')} - {end} UTC"
