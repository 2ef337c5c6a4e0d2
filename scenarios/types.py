"""The data a scenario turns into: SLOs (defined in `scenarios.slos`) and a deterministic request schedule.

A `Schedule` is a pure function of (scenario, seed, overrides); it holds token
*lengths* and prefix-block ids, not token ids. `scenarios.prompts` turns each
entry into concrete prompt token ids for a given vocabulary, deterministically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from scenarios.overrides import Overrides
from scenarios.slos import SLO_PERCENTILES, SLOs, check_percentile

if TYPE_CHECKING:  # for the annotation only: scenarios.settings imports the scenario schema
    from scenarios.settings import Settings

__all__ = ["Mode", "PREFIX_BLOCK_TOKENS", "SLO_PERCENTILES", "SLOs", "check_percentile", "ScheduledRequest",
           "SessionPlan", "Schedule"]

Mode = Literal["open", "closed", "offline"]

PREFIX_BLOCK_TOKENS = 512  # Mooncake: one hash id names one 512-token prompt block


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
