"""Multi-turn sessions -> schedule entries: when sessions start, how many turns, each turn's lengths and pause.

The scenario's `sessions` block (spec.SessionSpec, after `fit` and overrides) drives it. A pure function
of (scenario, effective settings) like the rest of a schedule: session starts, turns per session,
message and answer lengths and think times are drawn from numpy Generators seeded from (seed, stream). Session j's turn count and its turns' lengths do not change when only the session
rate or the number of users does. What this module does not decide: a turn's prompt (it holds the
previous turn's real answer, so `advisor.loadgen.sessions` builds it when the turn is sent) and, for open-loop
sessions, when turns after the first are sent (a think time after the previous answer ended).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from scenarios import spec as S
from scenarios.arrivals import Gamma
from scenarios.errors import ScenarioError
from scenarios.lengths import Fixed, LengthDist, Lognormal, Uniform, apply_scale_cap
from scenarios.types import ScheduledRequest, SessionPlan

# Random streams of their own (the plain schedule uses 0-3), so sessions never share draws with it.
_STARTS, _TURNS, _FIRST, _INPUT, _OUTPUT, _THINK, _NEW = 10, 11, 12, 13, 14, 15, 16
# n -> (input, output) lengths of the workload (its distributions or pairs), from two Generators
WorkloadLengths = Callable[[int, np.random.Generator, np.random.Generator], "tuple[np.ndarray, np.ndarray]"]


def _dist(d: S.LengthSpec) -> LengthDist:
    if isinstance(d, S.FixedLen):
        return Fixed(d.value)
    if isinstance(d, S.UniformLen):
        return Uniform(d.min, d.max)
    assert isinstance(d, S.LognormalLen), d  # empirical turns are refused by the spec; lengths resolved by caller
    return Lognormal(d.mean, d.median, d.min, d.max)


def expected_turns(d: S.LengthSpec) -> float:
    """Mean turns per session of a turns distribution (a lognormal's `mean` is its clipped mean by construction)."""
    if isinstance(d, S.FixedLen):
        return float(d.value)
    if isinstance(d, S.UniformLen):
        return (d.min + d.max) / 2
    assert isinstance(d, S.LognormalLen), d
    return float(d.mean)


def _think_s(rng: np.random.Generator, mean_s: float, cv: float, n: int) -> np.ndarray:
    """n gamma think times with this mean and CV (0: all equal to the mean)."""
    if mean_s <= 0 or n == 0:
        return np.zeros(n)
    if cv == 0:
        return np.full(n, mean_s)
    shape = 1.0 / (cv * cv)
    return rng.gamma(shape, mean_s / shape, size=n)


def _starts(a: S.SessionSpec, end_s: float, rng: np.random.Generator, limit: int) -> list[float]:
    """Open loop: session start offsets in [0, end_s), gamma gaps at rate_rps (new sessions per second)."""
    assert a.rate_rps is not None
    proc = Gamma(a.rate_rps, a.cv, rng)
    out: list[float] = []
    while len(out) < limit:
        t = proc.next_time_s()
        if t >= end_s:
            break
        out.append(t)
    return out


def build_sessions(scenario: S.Scenario, a: S.SessionSpec, *, seed: int, warmup_s: float, duration_s: float,
                   max_requests: int | None, length_scale: float, max_input_tokens: int | None,
                   max_output_tokens: int | None, lengths: WorkloadLengths, max_total: int
                   ) -> tuple[tuple[ScheduledRequest, ...], SessionPlan]:
    """The schedule entries of a session workload (session by session, turns in order) and how to drive them.

    Messages are `first_tokens` (turn 0) and `new_tokens` (later turns) long, each defaulting to the
    workload's input lengths; answers have the workload's output lengths (`lengths` draws both, jointly for
    pairs). `max_requests` caps the turns (the session that crosses it is cut short).
    """
    rng = {k: np.random.default_rng([seed, k]) for k in (_STARTS, _TURNS, _FIRST, _INPUT, _OUTPUT, _THINK, _NEW)}
    cap = min(max_requests or max_total + 1, max_total + 1)
    if a.closed:
        assert a.users is not None and a.sessions_per_user is not None
        n_sessions = a.users * a.sessions_per_user
        starts = [0.0] * n_sessions
    else:
        starts = _starts(a, warmup_s + duration_s, rng[_STARTS], cap)
        n_sessions = len(starts)
    turns = np.maximum(_dist(a.turns).sample(rng[_TURNS], n_sessions), 1)
    total = np.cumsum(turns)
    if n_sessions and total[-1] >= cap:  # whole sessions up to the cap; the one that crosses it is cut short
        keep = int(np.searchsorted(total, cap, side="left")) + 1
        turns = turns[:keep].copy()
        turns[-1] -= int(total[keep - 1]) - cap
        n_sessions, starts = keep, starts[:keep]
    n = int(turns.sum())
    if n > max_total:
        raise ScenarioError(f"scenario '{scenario.name}' would schedule more than {max_total:,} turns; lower the "
                            "session rate, --duration or --concurrency, or set --max-requests")
    first = _dist(a.first_tokens).sample(rng[_FIRST], n_sessions) if a.first_tokens is not None else None
    n_in, n_out = lengths(n, rng[_INPUT], rng[_OUTPUT])
    n_in, n_out = np.asarray(n_in, dtype=np.int64).copy(), np.asarray(n_out, dtype=np.int64)
    if a.new_tokens is not None:
        n_in = _dist(a.new_tokens).sample(rng[_NEW], n)
    think = _think_s(rng[_THINK], a.think_s, a.think_cv, n)
    session_of = np.repeat(np.arange(n_sessions), turns)
    first_idx = np.concatenate(([0], np.cumsum(turns)[:-1])).astype(np.int64) if n_sessions else np.zeros(0, int)
    if first is not None:
        n_in[first_idx] = first
    n_in = apply_scale_cap(n_in, length_scale, max_input_tokens)  # per message: turns are dropped to fit context
    n_out = apply_scale_cap(n_out, length_scale, max_output_tokens)
    if a.closed:  # each user's first session starts after a pause spread over one think time (users desynchronise)
        stagger = rng[_THINK].uniform(0.0, a.think_s, size=min(a.users or 0, n_sessions)) if a.think_s > 0 else []
        for j, s in enumerate(stagger):
            think[first_idx[j]] = s
        warm_rounds = math.ceil((a.sessions_per_user or 0) * warmup_s / (warmup_s + duration_s)) if warmup_s > 0 else 0
        warm_sessions = warm_rounds * (a.users or 0)
    else:
        think[first_idx] = 0.0  # an open-loop session starts at its arrival time
    is_first = np.zeros(n, dtype=bool)
    is_first[first_idx] = True
    reqs = []
    turn = 0
    for i in range(n):
        sid = int(session_of[i])
        turn = 0 if is_first[i] else turn + 1
        warm = sid < warm_sessions if a.closed else starts[sid] < warmup_s
        reqs.append(ScheduledRequest(idx=i, t_sched_s=0.0 if a.closed else float(starts[sid]), n_in=int(n_in[i]),
                                     n_out=int(n_out[i]), think_s=float(think[i]), warmup=bool(warm),
                                     session_id=sid, turn=turn))
    plan = SessionPlan(n_sessions=n_sessions, users=a.users, max_context_tokens=a.max_context_tokens,
                       window_end_s=None if a.closed else warmup_s + duration_s)
    return tuple(reqs), plan
