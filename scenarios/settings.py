"""The effective settings of one schedule: one typed object from `resolve()` to the saved run.

`scenarios.schedule.resolve` makes a `Settings` (the scenario, then its `fit` block unless
`--full-scale`, then the command line's overrides); the `Schedule` carries that object, and
`advisor.bench` saves that same object as result.json's `schedule.effective`. Nothing between
turns it into a dict and reads it back by key: `to_dict`/`from_dict` exist only at the file.

`target_rps` is the arrival process's mean rate (the load the settings aim at). It is not the
offered rate: that one is counted from the drawn schedule over the run's real window
(docs/metrics.md, "The real window") and saved once, as the run summary's `offered_rps`. So
`target_rps` is not written to result.json (it follows from `arrival`, or a trace's own rate);
older files wrote it there as `offered_rps`, and `from_dict` drops that key.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, fields
from typing import Any

from pydantic import TypeAdapter, ValidationError

from scenarios import spec as S

_ARRIVAL = TypeAdapter(S.ArrivalSpec)


@dataclass(frozen=True)
class Settings:
    """The effective parameters of one schedule (what was actually run)."""

    arrival: S.ArrivalSpec | None = None  # None: multi-turn `sessions` drive the arrivals
    duration_s: float = 0.0
    warmup_s: float = 0.0
    seed: int = 0
    max_requests: int | None = None
    length_scale: float = 1.0
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    fitted: bool = False  # the scenario's `fit` block was applied
    notes: tuple[str, ...] = ()  # what the schedule did that the user should know (a compressed profile, ...)
    sessions: S.SessionSpec | None = None  # multi-turn sessions (instead of `arrival`)
    # the arrival process's mean rate, requests (turns) per second; None for closed loop and offline. Not saved.
    target_rps: float | None = None

    @property
    def mode(self) -> str | None:
        """open, closed or offline; None only for a saved run that recorded neither arrival nor sessions."""
        if self.sessions is not None:
            return "closed" if self.sessions.closed else "open"
        if self.arrival is None:
            return None
        return {"closed": "closed", "offline": "offline"}.get(self.arrival.process, "open")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for the result ("what was actually run"); `target_rps` stays out (see the module)."""
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "target_rps"}
        d["arrival"] = self.arrival.model_dump(mode="json") if self.arrival is not None else None
        d["sessions"] = self.sessions.model_dump(mode="json", exclude_none=True) if self.sessions is not None else None
        d["notes"] = list(self.notes)
        d["mode"] = self.mode
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Settings:
        """A saved run's settings. A key an older file lacks takes the default; the arrival and sessions
        blocks are checked against today's scenario schema, and one that no longer passes is still loaded
        (a run valid when it was made is not refused because the schema moved on)."""
        if not isinstance(d, dict):
            raise ValueError(f"schedule.effective is {type(d).__name__}, not an object")
        # not read back: `target_rps` (not saved), an older file's `offered_rps` (the target under its old
        # name) and `mode` (follows from arrival and sessions)
        known = {f.name for f in fields(cls)} - {"target_rps"}
        kw: dict[str, Any] = {k: v for k, v in d.items() if k in known and v is not None}
        if "arrival" in kw:
            kw["arrival"] = _lenient(kw["arrival"], _arrival_class(kw["arrival"]), _ARRIVAL.validate_python)
        if "sessions" in kw:
            kw["sessions"] = _lenient(kw["sessions"], S.SessionSpec, S.SessionSpec.model_validate)
        if "notes" in kw:
            kw["notes"] = tuple(str(n) for n in kw["notes"])
        for name, conv in (("duration_s", float), ("warmup_s", float), ("length_scale", float), ("seed", int),
                           ("fitted", bool)):
            if name in kw:
                kw[name] = conv(kw[name])
        return cls(**kw)


def _arrival_class(doc: Any) -> type[S._Strict] | None:
    """The arrival model whose `process` the document names (None: no such process today)."""
    process = doc.get("process") if isinstance(doc, dict) else None
    for cls in typing.get_args(typing.get_args(S.ArrivalSpec)[0]):
        if process in typing.get_args(cls.model_fields["process"].annotation):
            return cls
    return None


def _lenient(doc: Any, cls: type[S._Strict] | None, validate) -> Any:
    """The block validated; where today's schema refuses it, built as saved (unknown keys dropped)."""
    if not isinstance(doc, dict):
        raise ValueError(f"schedule.effective holds a {type(doc).__name__} where an object belongs")
    try:
        return validate(doc)
    except ValidationError:
        if cls is None:
            raise ValueError(f"schedule.effective names an arrival process advisor does not know: "
                             f"{doc.get('process')!r}") from None
        return cls.model_construct(**{k: v for k, v in doc.items() if k in cls.model_fields})
