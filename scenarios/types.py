"""The data a scenario turns into: SLOs and a deterministic request schedule.

A `Schedule` is a pure function of (scenario, seed, overrides); it holds token
*lengths* and prefix-block ids, not token ids. `scenarios.prompts` turns each
entry into concrete prompt token ids for a given vocabulary, deterministically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict

from scenarios.overrides import Overrides

if TYPE_CHECKING:  # scenarios.settings imports the scenario schema, which imports SLOs from here
    from scenarios.settings import Settings

Mode = Literal["open", "closed", "offline"]

PREFIX_BLOCK_TOKENS = 512  # Mooncake: one hash id names one 512-token prompt block
# The percentiles a run reports (advisor.metrics.distribution.PERCENTILES), so the ones an SLO can name
SLO_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0, 99.9)


def check_percentile(percentile: float) -> float:
    """`percentile` as a float when a run reports it; ValueError that lists the ones it does otherwise."""
    p = float(percentile)
    if p not in SLO_PERCENTILES:
        raise ValueError(f"SLO percentile {p:g} is not one advisor reports; use one of "
                         f"{', '.join(f'{q:g}' for q in SLO_PERCENTILES)}")
    return p


@dataclass(frozen=True, slots=True)
class SLOs:
    """Per-request limits; a request is 'good' when it meets every limit that is set.

    The run meets its SLOs when the `percentile`-th percentile of each metric is
    within its limit (e.g. p95 TTFT <= ttft_ms). Also the scenario YAML's `slos` block
    (pydantic validates it through this class: unknown keys and non-finite numbers refused).
    """

    __pydantic_config__ = ConfigDict(extra="forbid", allow_inf_nan=False)

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    percentile: float = 95.0

    def __post_init__(self) -> None:
        for name in ("ttft_ms", "tpot_ms", "e2e_ms"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
                                  or v <= 0):
                raise ValueError(f"SLO {name} must be a finite number > 0, got {v!r}")
        check_percentile(self.percentile)

    @property
    def any_limit(self) -> bool:
        """Whether any latency limit is set (without one there is no goodput or SLO verdict to report)."""
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.e2e_ms))

    def to_dict(self) -> dict[str, Any]:
        """result.json's `slos` object."""
        return {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "e2e_ms": self.e2e_ms, "percentile": self.percentile}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SLOs:
        """Inverse of `to_dict`; a missing limit is unset, a missing percentile 95."""
        return cls(**{k: d[k] for k in ("ttft_ms", "tpot_ms", "e2e_ms", "percentile") if d.get(k) is not None})


@dataclass(frozen=True, slots=True)
class ScheduledRequest:
    idx: int
    t_sched_s: float  # offset from run start (open loop, offline: 0.0); closed loop: 0.0, see think_s
    n_in: int  # prompt tokens
    n_out: int  # output tokens asked for (exact: ignore_eos)
    prefix_blocks: tuple[int, ...] = ()  # shared 512-token prefix blocks (Mooncake hash_ids)
    think_s: float = 0.0  # closed loop and session turns: the pause before sending (after the previous answer)
    warmup: bool = False  # excluded from measurement (open-loop sessions: settled when the turn falls due)
    # Multi-turn sessions: a session's turns are consecutive entries, turn 0 first; a runner (or a worker that
    # shards the schedule) must keep a whole session together, since turn k's prompt is built from turn k-1's answer.
    session_id: int | None = None
    turn: int = 0


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """How a session schedule is driven (scenarios.sessions builds it; advisor.loadgen.drive runs it).

    Closed (`users` set): that many users, each taking the next whole session when its last one ended.
    Open (`users` None): a session starts at its turn 0's `t_sched_s`; turn k goes `think_s` after turn
    k-1 ended, and a turn falling due after `window_end_s` is not sent. The prompt of each turn is
    built when it is sent (advisor.loadgen.sessions), never here: it holds the previous turn's real answer.
    """

    n_sessions: int
    users: int | None
    window_end_s: float | None  # open loop: turns due after this are not sent
    max_context_tokens: int | None  # the scenario's own limit (the engine's context also applies)


@dataclass(frozen=True)
class Schedule:
    scenario: str
    mode: Mode
    requests: tuple[ScheduledRequest, ...]
    seed: int
    slos: SLOs
    warmup_s: float = 0.0  # open loop: requests scheduled before this are warm-up
    duration_s: float = 0.0  # open loop: measurement window length after warm-up
    concurrency: int | None = None  # closed loop: number of concurrent users
    overrides: Overrides = field(default_factory=Overrides)  # what the user changed, as given
    settings: Settings | None = None  # what was actually run, resolved once (None: a schedule made by hand)
    sessions: SessionPlan | None = None  # multi-turn sessions (requests grouped by session_id)

    @property
    def window_s(self) -> tuple[float, float]:
        """Measurement window in seconds from run start (open loop)."""
        return (self.warmup_s, self.warmup_s + self.duration_s)
