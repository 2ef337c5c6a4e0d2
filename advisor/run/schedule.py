"""How a saved run was planned: result.json's `schedule` object, typed, with its repeat tag.

Written once by `advisor.run.bench` from the `Schedule` it ran; `advisor.repeats.group.tag_run` adds the repeat
tag afterwards. `effective` is the very `scenarios.settings.Settings` object the schedule was built
from (`Settings.from_dict` reads a saved one back, and loads an arrival or sessions block that
today's scenario schema would refuse rather than refuse a run that was valid when it was made).

The offered rate is not here: it is saved once, as the summary's `offered_rps`, and read through
`advisor.run.rates`. Older files may also hold it as `schedule.offered_rps` (always the same number:
one variable fed both); reading drops that copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator

from fileform import OWN_FORM, FileForm
from scenarios.overrides import Overrides
from scenarios.settings import Settings

REPEAT_KEY = "repeat"  # under result.json's "schedule": how this run was planned


def _saved_overrides(v: Any) -> Overrides:
    if isinstance(v, Overrides):
        return v
    if not isinstance(v, dict):
        raise ValueError("input should be an object")
    return Overrides.from_saved(v)


# the command-line overrides as given: only what the user set is written (`Overrides.as_dict`), and a saved
# value today's ranges refuse is kept as saved (`Overrides.from_saved`)
SavedOverrides = Annotated[Overrides, PlainValidator(_saved_overrides), PlainSerializer(lambda o: o.as_dict())]


@dataclass(frozen=True)
class RepeatTag(FileForm):
    group_id: str
    index: int = 0  # 0-based
    count: int = 1  # repeats planned
    restart_engine: bool = False


@dataclass(frozen=True)
class RunSchedule(FileForm):
    mode: str  # "open", "closed" or "offline"
    seed: int | None = None
    overrides: SavedOverrides = field(default_factory=Overrides)  # the command-line overrides as given
    n_requests: int | None = None  # scheduled, warm-up included
    warmup_s: float | None = None
    duration_s: float | None = None
    concurrency: int | None = None  # closed loop: users
    # the resolved settings (None: a run saved before they were recorded, written as {})
    effective: Annotated[Settings, OWN_FORM] | None = None
    repeat: RepeatTag | None = None  # one repeat of a cell (advisor.repeats.group); the key is left out when None

    @property
    def notes(self) -> tuple[str, ...]:
        """What resolving the settings had to say (e.g. a compressed rate profile)."""
        return self.effective.notes if self.effective is not None else ()

    @property
    def fitted(self) -> bool:
        """The scenario's `fit` block scaled this run down (no --full-scale)."""
        return self.effective is not None and self.effective.fitted

    def to_dict(self) -> dict[str, Any]:
        """The fields (`FileForm`), with the file's two shapes for "none": `effective` {}, no `repeat` key."""
        d = super().to_dict()
        if d["effective"] is None:
            d["effective"] = {}
        if d[REPEAT_KEY] is None:
            del d[REPEAT_KEY]
        return d

    @classmethod
    def upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        """`effective` {} is None; a repeat tag that is no object or names no group is none (the key `offered_rps`
        of older files is not a field, so it is dropped)."""
        d = dict(d)
        if d.get("effective") == {}:
            d["effective"] = None
        tag = d.get(REPEAT_KEY)
        if not (isinstance(tag, dict) and tag.get("group_id")):
            d[REPEAT_KEY] = None
        return d
