"""How a saved run was planned: result.json's `schedule` object, typed, with its repeat tag.

Written once by `advisor.bench` from the `Schedule` it ran; `advisor.repeats.tag_run` adds the repeat
tag afterwards. `effective` is the very `scenarios.settings.Settings` object the schedule was built
from (`Settings.from_dict` reads a saved one back, and loads an arrival or sessions block that
today's scenario schema would refuse rather than refuse a run that was valid when it was made).

The offered rate is not here: it is saved once, as the summary's `offered_rps`, and read through
`advisor.run_rates`. Older files may also hold it as `schedule.offered_rps` (always the same number:
one variable fed both); `from_dict` drops that copy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from scenarios.overrides import Overrides
from scenarios.settings import Settings

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
    overrides: Overrides = field(default_factory=Overrides)  # the command-line overrides as given
    n_requests: int | None = None  # scheduled, warm-up included
    warmup_s: float | None = None
    duration_s: float | None = None
    concurrency: int | None = None  # closed loop: users
    effective: Settings | None = None  # the resolved settings (None: a run saved before they were recorded)
    repeat: RepeatTag | None = None  # one repeat of a cell (advisor.repeats)

    @property
    def notes(self) -> tuple[str, ...]:
        """What resolving the settings had to say (e.g. a compressed rate profile)."""
        return self.effective.notes if self.effective is not None else ()

    @property
    def fitted(self) -> bool:
        """The scenario's `fit` block scaled this run down (no --full-scale)."""
        return self.effective is not None and self.effective.fitted

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != REPEAT_KEY}
        out["overrides"] = self.overrides.as_dict()
        out["effective"] = self.effective.to_dict() if self.effective is not None else {}
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
        kw["overrides"] = Overrides.from_saved(kw.get("overrides") or {})
        kw["effective"] = Settings.from_dict(kw["effective"]) if kw.get("effective") else None
        kw[REPEAT_KEY] = RepeatTag.from_dict(d.get(REPEAT_KEY))
        return cls(**kw)
