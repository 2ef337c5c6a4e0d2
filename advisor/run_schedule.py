"""How a saved run was planned: result.json's `schedule` object, typed, with its repeat tag.

Written once by `advisor.bench` from the `Schedule` it ran; `advisor.repeats.tag_run` adds the repeat
tag afterwards. `effective` stays the resolved settings as `scenarios.schedule.Settings.to_dict()`
wrote them: its arrival and sessions blocks are scenario-schema documents, and re-validating an
old run against today's scenario schema could refuse a run that was valid when it was made.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

REPEAT_KEY = "repeat"  # under result.json's "schedule": how this run was planned


@dataclass(frozen=True)
class RepeatTag:
    group_id: str
    index: int  # 0-based
    count: int  # repeats planned
    restart_engine: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Any) -> RepeatTag | None:
        """The tag, or None where there is none (not an object, or no group id)."""
        if not isinstance(d, dict) or not d.get("group_id"):
            return None
        return cls(str(d["group_id"]), int(d.get("index", 0)), int(d.get("count", 1)), bool(d.get("restart_engine")))


@dataclass(frozen=True)
class RunSchedule:
    mode: str  # "open", "closed" or "offline"
    seed: int | None = None
    overrides: dict[str, Any] = field(default_factory=dict)  # the command-line overrides as given
    n_requests: int | None = None  # scheduled, warm-up included
    offered_rps: float | None = None  # open loop: the planned rate over the window
    warmup_s: float | None = None
    duration_s: float | None = None
    concurrency: int | None = None  # closed loop: users
    effective: dict[str, Any] = field(default_factory=dict)  # the resolved settings (scenarios.schedule.Settings)
    repeat: RepeatTag | None = None  # one repeat of a cell (advisor.repeats)

    @property
    def notes(self) -> tuple[str, ...]:
        """What resolving the settings had to say (e.g. a compressed rate profile)."""
        return tuple(str(n) for n in self.effective.get("notes") or ())

    @property
    def fitted(self) -> bool:
        """The scenario's `fit` block scaled this run down (no --full-scale)."""
        return bool(self.effective.get("fitted"))

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != REPEAT_KEY}
        if self.repeat is not None:
            out[REPEAT_KEY] = self.repeat.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSchedule:
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        for name in ("overrides", "effective"):
            if not isinstance(kw.get(name) or {}, dict):
                raise ValueError(f"schedule.{name} is {type(kw[name]).__name__}, not an object")
            kw[name] = dict(kw.get(name) or {})
        kw[REPEAT_KEY] = RepeatTag.from_dict(d.get(REPEAT_KEY))
        return cls(**kw)
