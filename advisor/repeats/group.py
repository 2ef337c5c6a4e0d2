"""Repeat groups: one benchmark cell run N times, each repeat an ordinary saved run, read back as one option.

`run_repeats(run_one, n)` calls `run_one(i)` for i = 0..n-1 (the caller decides whether the engine
restarts between repeats) and tags every saved run's result.json with
`schedule.repeat = {"group_id", "index", "count", "restart_engine"}`. `group_runs` puts saved runs back
into groups (a run without a tag is a group of one), and `RepeatGroup.figures()` gives every headline
figure as the median of its repeats with an order-statistic interval (`advisor.metrics.intervals`).
For a sweep the repeats are per step: one group per rate.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from advisor.metrics.intervals import DEFAULT_CONFIDENCE, Interval, median_interval
from advisor.metrics.registry import METRICS, Better
from advisor.run.schedule import RepeatTag
from advisor.saved.store import RunResult


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    better: Better
    metric: str  # the RunSummary field
    percentile: float | None = None  # of a distribution; None: the field is the figure


# per-request figures from the metric registry (its `percentiles`), then the run's rates
FIGURES: tuple[Figure, ...] = (
    *(Figure(m.figure_key(p), f"{m.header} p{p:g}", m.unit, m.better, m.key, float(p))
      for m in METRICS for p in m.percentiles),
    Figure("output_tokens_per_s", "output tokens/s", "tok/s", "higher", "output_tokens_per_s"),
    Figure("requests_per_s", "requests/s", "req/s", "higher", "requests_per_s"),
    Figure("goodput_rps", "goodput", "req/s", "higher", "goodput_rps"),
)
FIGURE_BY_KEY = {f.key: f for f in FIGURES}


def repeat_tag(run: RunResult) -> RepeatTag | None:
    """The run's repeat tag, or None for a run made on its own."""
    return run.schedule.repeat


def figure_value(run: RunResult, key: str) -> float | None:
    """One headline figure of one saved run (None when the run has none, e.g. too few requests)."""
    fig = FIGURE_BY_KEY[key]
    v = getattr(run.summary, fig.metric)
    if fig.percentile is not None:
        v = v.at(fig.percentile)
    return None if v is None else float(v)


def new_group_id(label: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", label)[:50].strip("-") or "cell"
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-repeats-{slug}-{secrets.token_hex(2)}"


def tag_run(run: RunResult, tag: RepeatTag) -> RunResult:
    """Record the tag in the run's result.json (rewritten in place, atomically; records untouched)."""
    if run.path is None:
        raise ValueError(f"run {run.run_id} was not saved: a repeat must be an ordinary saved run")
    run.schedule = replace(run.schedule, repeat=tag)
    run.save(run.path.parent)
    return run


@dataclass(frozen=True)
class RepeatGroup:
    """Runs of one cell; a run made on its own is a group of one (group_id = its run id)."""

    group_id: str
    runs: tuple[RunResult, ...]
    planned: int  # repeats asked for (more than len(runs) when some did not finish)
    restart_engine: bool = False

    @property
    def n(self) -> int:
        return len(self.runs)

    @property
    def is_repeated(self) -> bool:
        return self.n > 1

    @property
    def status(self) -> str:
        """VALID only when every repeat is; otherwise the worst status (FAILED, SATURATED, then INVALID)."""
        statuses = [r.verdict.status for r in self.runs]
        for s in ("FAILED", "SATURATED", "INVALID"):
            if s in statuses:
                return s
        return "VALID" if statuses and all(s == "VALID" for s in statuses) else "INVALID"

    def values(self, key: str) -> list[float]:
        return [v for r in self.runs if (v := figure_value(r, key)) is not None]

    def interval(self, key: str, confidence: float = DEFAULT_CONFIDENCE) -> Interval | None:
        """Median of the repeats and its interval (None when no repeat has the figure)."""
        vals = self.values(key)
        return median_interval(vals, confidence) if vals else None

    def figures(self, confidence: float = DEFAULT_CONFIDENCE) -> dict[str, Interval]:
        """Every headline figure the repeats have, as median + interval."""
        return {f.key: iv for f in FIGURES if (iv := self.interval(f.key, confidence)) is not None}

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (JSON built from properties, never read back)
        return {"group_id": self.group_id, "run_ids": [r.run_id for r in self.runs], "planned": self.planned,
                "restart_engine": self.restart_engine, "status": self.status,
                "figures": {k: iv.to_dict() for k, iv in self.figures().items()}}


def run_repeats(run_one: Callable[[int], RunResult], n: int, *, label: str = "", restart_engine: bool = False,
                group_id: str | None = None,
                on_repeat: Callable[[int, RunResult], None] | None = None) -> RepeatGroup:
    """Run one cell `n` times; each `run_one(i)` returns its saved run, which is tagged into one group.

    `restart_engine` is recorded, not acted on: `run_one` starts a fresh engine per repeat when asked,
    else reuses a started one. A repeat that raises ends the group; the ones before it stay saved and tagged.
    """
    if n < 1:
        raise ValueError(f"--repeats must be at least 1, got {n}")
    gid = group_id or new_group_id(label or "cell")
    runs: list[RunResult] = []
    for i in range(n):
        run = tag_run(run_one(i), RepeatTag(gid, i, n, restart_engine))
        runs.append(run)
        if on_repeat is not None:
            on_repeat(i, run)
    return RepeatGroup(gid, tuple(runs), n, restart_engine)


def group_runs(runs: Iterable[RunResult]) -> list[RepeatGroup]:
    """Saved runs as repeat groups, in the order each group's first run appears; untagged runs alone."""
    order: list[str] = []
    members: dict[str, list[RunResult]] = {}
    meta: dict[str, RepeatTag | None] = {}
    for r in runs:
        tag = repeat_tag(r)
        gid = tag.group_id if tag else r.run_id
        if gid not in members:
            order.append(gid)
            members[gid], meta[gid] = [], tag
        members[gid].append(r)
    out = []
    for gid in order:
        tag, rs = meta[gid], members[gid]
        rs.sort(key=lambda r: (t.index if (t := repeat_tag(r)) else 0, r.created_utc))
        out.append(RepeatGroup(gid, tuple(rs), tag.count if tag else 1, tag.restart_engine if tag else False))
    return out


def find_group(runs: Sequence[RunResult], group_id: str) -> RepeatGroup | None:
    """The group with this id among `runs` (a run id finds that run alone, unless it is tagged)."""
    return next((g for g in group_runs(runs) if g.group_id == group_id), None)
