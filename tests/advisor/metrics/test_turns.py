"""Per-turn metrics of session runs from hand-made records."""

from __future__ import annotations

import dataclasses
import json

from advisor.metrics import summarize
from advisor.metrics.turns import SessionStats, session_stats, turn_label
from scenarios.types import SLOs
from tests.advisor.metrics.make import rec


def _turn(session: int, turn: int, ttft_ms: float, n_in: int, shared: int, *, dropped: int = 0, warmup: bool = False,
          error: str | None = None, sent: bool = True):
    r = rec(0, 100 if sent else None, [(100 + ttft_ms, 1), (110 + ttft_ms, 1)] if error is None and sent else [],
            n_in=n_in, warmup=warmup, error_kind=error if sent else "cancelled", idx=10 * session + turn)
    return dataclasses.replace(r, session_id=session, turn=turn, n_in_shared=shared, turns_dropped=dropped)


def test_ttft_and_prompt_length_by_turn_with_reuse_and_drops():
    records = [
        _turn(0, 0, 10, 100, 0), _turn(0, 1, 20, 250, 220), _turn(0, 2, 30, 400, 100, dropped=2),
        _turn(1, 0, 12, 80, 0), _turn(1, 1, 22, 200, 180, error="timeout"),
        _turn(2, 0, 11, 90, 0, warmup=True), _turn(2, 1, 21, 210, 190),  # a session that started in warm-up
        _turn(3, 0, 5, 50, 0, warmup=True),  # warm-up only: not a measured session
        _turn(4, 0, 9, 60, 0), _turn(4, 1, 0, 0, 0, sent=False, warmup=True),  # its turn fell after the window
    ]
    s = session_stats(records)
    assert s is not None
    assert s.n_sessions == 4  # 0, 1, 2, 4
    assert s.turns_per_session_mean == 8 / 4  # turns sent in those sessions, warm-up ones too
    assert (s.n_truncated, s.turns_dropped) == (1, 2)
    assert s.prefix_reuse == (220 + 100 + 190) / (250 + 400 + 210)  # successful measured later turns
    rows = {t.turn: t for t in s.by_turn}
    assert list(rows) == ["1", "2", "3"]
    assert rows["1"].n == 3 and rows["1"].ttft_ms.p50 == 10  # sessions 0, 1, 4 (session 2's first turn was warm-up)
    assert rows["2"].n == 2 and rows["2"].ttft_ms.mean == 20.5  # sessions 0 and 2 (20, 21 ms): the failed turn is out
    assert rows["3"].prompt_tokens.max == 400 and rows["3"].shared_tokens_mean == 100
    back = SessionStats.from_dict(json.loads(json.dumps(s.to_dict(), allow_nan=False)))
    assert back == s


def test_late_turns_are_pooled_and_plain_runs_have_no_session_stats():
    assert [turn_label(t) for t in (0, 8, 9, 30)] == ["1", "9", "10+", "10+"]
    records = [_turn(0, t, 10 + t, 10 * (t + 1), 10 * t) for t in range(12)]
    s = session_stats(records)
    assert s is not None and [t.turn for t in s.by_turn][-1] == "10+" and s.by_turn[-1].n == 3
    plain = [rec(0, 1, [(5, 1)])]
    assert session_stats(plain) is None
    assert summarize(plain, mode="closed", slos=SLOs(), window_ns=None).sessions is None
    assert summarize(records, mode="closed", slos=SLOs(), window_ns=None).sessions == s
