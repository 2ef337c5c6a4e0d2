"""The effective settings of one schedule: one typed object from `resolve()` to the saved run.

`scenarios.schedule.resolve` makes a `Settings` (the scenario, then its `fit` block unless
`--full-scale`, then the command line's overrides); the `Schedule` carries that object, and
`advisor.run.bench` saves that same object as result.json's `schedule.effective`. Nothing between
turns it into a dict and reads it back by key: `to_dict`/`from_dict` exist only at the file.

`target_rps` is the arrival process's mean rate (the load the settings aim at). It is not the
offered rate: that one is counted from the drawn schedule over the run's real window
(docs/metrics.md, "The real window") and saved once, as the run summary's `offered_rps`. So
`target_rps` is not written to result.json (it follows from `arrival`, or a trace's own rate);
older files wrote it there as `offered_rps`, and reading drops that key.

The fields are the file's keys (`FileForm`); the saved `arrival` and `sessions` blocks are read leniently
(`_lenient`), and `mode` is written after them (it follows from the two, and is not read back).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, PlainSerializer, PlainValidator, TypeAdapter, ValidationError

from fileform import FileForm
from scenarios import spec as S

_ARRIVAL = TypeAdapter(S.ArrivalSpec)


def _saved_arrival(doc: Any) -> Any:
    return doc if doc is None or isinstance(doc, S._Strict) else _lenient(doc, _arrival_class(doc),
                                                                          _ARRIVAL.validate_python)


def _saved_sessions(doc: Any) -> Any:
    return doc if doc is None or isinstance(doc, S.SessionSpec) else _lenient(doc, S.SessionSpec,
                                                                              S.SessionSpec.model_validate)


# checked against today's scenario schema, and loaded as saved where it no longer passes (a run valid when it
# was made is not refused because the schema moved on)
SavedArrival = Annotated[S.ArrivalSpec | None, PlainValidator(_saved_arrival),
                         PlainSerializer(lambda a: None if a is None else a.model_dump(mode="json"))]
SavedSessions = Annotated[S.SessionSpec | None, PlainValidator(_saved_sessions),
                          PlainSerializer(lambda s: None if s is None else s.model_dump(mode="json", exclude_none=True))]


@dataclass(frozen=True)
class Settings(FileForm):
    """The effective parameters of one schedule (what was actually run)."""

    arrival: SavedArrival = None  # None: multi-turn `sessions` drive the arrivals
    duration_s: float = 0.0
    warmup_s: float = 0.0
    seed: int = 0
    max_requests: int | None = None
    length_scale: float = 1.0
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    fitted: bool = False  # the scenario's `fit` block was applied
    notes: tuple[str, ...] = ()  # what the schedule did that the user should know (a compressed profile, ...)
    sessions: SavedSessions = None  # multi-turn sessions (instead of `arrival`)
    # the arrival process's mean rate, requests (turns) per second; None for closed loop and offline. Not saved.
    target_rps: Annotated[float | None, Field(exclude=True)] = None

    @property
    def mode(self) -> str | None:
        """open, closed or offline; None only for a saved run that recorded neither arrival nor sessions."""
        if self.sessions is not None:
            return "closed" if self.sessions.closed else "open"
        if self.arrival is None:
            return None
        return {"closed": "closed", "offline": "offline"}.get(self.arrival.process, "open")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for the result ("what was actually run"): the fields but `target_rps`, then `mode`."""
        return {**super().to_dict(), "mode": self.mode}

    @classmethod
    def upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        """Not read back: `target_rps` (not saved), an older file's `offered_rps` (the target under its old
        name: not a field, so dropped) and `mode` (follows from arrival and sessions: not a field)."""
        return {k: v for k, v in d.items() if k != "target_rps"}


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
