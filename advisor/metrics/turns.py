"""Multi-turn metrics: TTFT and prompt length by turn index, context drops and prefix reuse, from raw records.

Only records of session runs carry a `turn`; for any other run `session_stats` returns None. Turns are
numbered from 1 for people (turn 1 = the first message of a conversation); turns from `POOLED_FROM` on
are pooled into one row, since few conversations get that long. Latencies are over successful measured
requests, as everywhere (advisor.metrics.summary); counts of dropped turns are over measured requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.loadgen.records import RequestRecord
from advisor.metrics import per_request as pr
from advisor.metrics.distribution import Distribution
from fileform import FileForm

POOLED_FROM = 10  # turns 10, 11, ... share the row "10+"


@dataclass(frozen=True, slots=True)
class TurnStats(FileForm):
    turn: str  # "1" .. "9", "10+"
    n: int  # successful measured requests at this turn
    ttft_ms: Distribution
    e2e_ms: Distribution
    prompt_tokens: Distribution  # the whole prompt sent: the conversation so far plus the new message
    shared_tokens_mean: float | None  # of it, repeated verbatim from the previous turn's prompt + answer


@dataclass(frozen=True, slots=True)
class SessionStats(FileForm):
    n_sessions: int  # conversations with at least one measured turn
    turns_per_session_mean: float | None  # turns sent per such conversation (measured or not)
    n_truncated: int  # measured requests whose conversation had to drop its oldest turns to fit the context
    turns_dropped: int  # turns dropped in all, at those requests
    prefix_reuse: float | None  # share of measured prompt tokens (turns after the first) repeated from the last turn
    by_turn: tuple[TurnStats, ...] = ()


def turn_label(turn: int) -> str:
    """Row label of a 0-based turn index: "1" for the first message, "10+" from POOLED_FROM on."""
    return f"{POOLED_FROM}+" if turn + 1 >= POOLED_FROM else str(turn + 1)


def session_stats(records: Sequence[RequestRecord]) -> SessionStats | None:
    """Per-turn statistics of a session run; None when no record belongs to a session."""
    in_sessions = [r for r in records if r.session_id is not None and r.turn is not None]
    if not in_sessions:
        return None
    measured = [r for r in in_sessions if not r.warmup]
    ok = [r for r in measured if r.ok]
    sessions = {r.session_id for r in measured}
    sent = [r for r in in_sessions if r.t_send_ns is not None and r.session_id in sessions]
    later = [r for r in ok if (r.turn or 0) > 0]
    prompt_later = sum(r.n_in_client for r in later)
    rows: dict[str, list[RequestRecord]] = {}
    for r in sorted(ok, key=lambda r: r.turn or 0):
        rows.setdefault(turn_label(r.turn or 0), []).append(r)
    by_turn = tuple(
        TurnStats(turn=label, n=len(rs),
                  ttft_ms=Distribution.from_values(v for r in rs if (v := pr.ttft_ms(r)) is not None),
                  e2e_ms=Distribution.from_values(v for r in rs if (v := pr.e2e_ms(r)) is not None),
                  prompt_tokens=Distribution.from_values(float(r.n_in_client) for r in rs),
                  shared_tokens_mean=sum(r.n_in_shared for r in rs) / len(rs))
        for label, rs in rows.items())
    return SessionStats(
        n_sessions=len(sessions),
        turns_per_session_mean=len(sent) / len(sessions) if sessions else None,
        n_truncated=sum(1 for r in measured if r.turns_dropped > 0),
        turns_dropped=sum(r.turns_dropped for r in measured),
        prefix_reuse=sum(r.n_in_shared for r in later) / prompt_later if prompt_later else None,
        by_turn=by_turn)
