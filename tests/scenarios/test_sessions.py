"""Session scenarios: the YAML schema, the overrides, and the schedule of turns they give."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios.catalog import ScenarioError, load_scenario, scenario_from_dict
from scenarios.schedule import Overrides, build_schedule, resolve


def _sc(drive: dict, shape: dict | None = None, **top):
    """A scenario whose `sessions` block is `drive` (rate or users, think time) + `shape` (turns, lengths)."""
    d = {"name": "conv", "description": "multi-turn conversations for the schedule tests",
         "workload": {"input": {"dist": "fixed", "value": 10}, "output": {"dist": "fixed", "value": 5}},
         "sessions": {**drive, **(shape or {})}, "duration_s": 60.0, "warmup_s": 10.0, **top}
    return scenario_from_dict(d)


TURNS3 = {"turns": {"dist": "fixed", "value": 3}}


POISSON = {"process": "poisson", "rate_rps": 1}


@pytest.mark.parametrize("drive, shape, top, msg", [
    ({"users": 2, "sessions_per_user": 1, "think_s": 1}, None, {}, "turns"),
    ({"rate_rps": 1, "think_s": 1}, TURNS3, {"arrival": POISSON}, "remove `arrival`"),
    ({"rate_rps": 1, "think_s": 1}, TURNS3, {"fit": {"arrival": POISSON}}, "give fit.sessions"),
    ({"users": 2, "rate_rps": 1, "sessions_per_user": 1, "think_s": 1}, TURNS3, {}, "exactly one of"),
    ({"think_s": 1}, TURNS3, {}, "exactly one of"),
    ({"users": 2, "think_s": 1}, TURNS3, {}, "need `sessions_per_user`"),
    ({"rate_rps": 1, "sessions_per_user": 3, "think_s": 1}, TURNS3, {}, "is for closed-loop"),
    ({"rate_rps": 1, "think_s": -1}, TURNS3, {}, "think_s"),
    ({"rate_rps": 1, "think_s": 1}, {"turns": {"dist": "fixed", "value": 0}}, {}, "turns"),
    ({"rate_rps": 1, "think_s": 1}, {"turns": {"dist": "empirical", "trace": {"file": "x.csv"}}}, {},
     "not empirical"),
    ({"rate_rps": 1, "think_s": 1}, {**TURNS3, "max_context_tokens": 0}, {}, "max_context_tokens"),
    ({"rate_rps": 1, "think_s": 1}, TURNS3, {"workload": {"trace": {"file": "x.csv"}}}, "not a `trace`"),
])
def test_bad_session_scenarios_get_one_clear_line(drive, shape, top, msg):
    with pytest.raises(ScenarioError, match=msg) as e:
        _sc(drive, shape, **top)
    assert "\n" not in str(e.value)


def test_closed_sessions_are_whole_conversations_per_user_with_warm_up_rounds():
    sc = _sc({"users": 4, "sessions_per_user": 6, "think_s": 2.0}, TURNS3)
    s = build_schedule(sc, seed=1)
    assert s.mode == "closed" and s.sessions.users == 4 and s.sessions.n_sessions == 24 and s.concurrency == 4
    assert len(s.requests) == 72
    for i, r in enumerate(s.requests):
        assert r.session_id == i // 3 and r.turn == i % 3 and r.t_sched_s == 0.0
        assert r.warmup == (r.session_id < 4)  # 6 sessions per user over 70 s: the first round is in the 10 s warm-up
        if r.session_id < 4 and r.turn == 0:
            assert 0 <= r.think_s <= 2.0  # users start staggered over one think time
    assert build_schedule(sc, overrides=Overrides(concurrency=2)).sessions.n_sessions == 12
    # sessions_per_user is for the scenario's own window and scales with it
    assert build_schedule(sc, overrides=Overrides(duration_s=130.0)).sessions.n_sessions == 4 * 12  # 140 s / 70 s


def test_open_sessions_start_at_the_session_rate_and_rate_means_requests_per_second():
    sc = _sc({"rate_rps": 2.0, "think_s": 5.0}, TURNS3, duration_s=500.0)
    st = resolve(sc)
    assert st.mode == "open" and st.target_rps == pytest.approx(6.0)  # 2 sessions/s x 3 turns
    s = build_schedule(sc, seed=2)
    starts = [r.t_sched_s for r in s.requests if r.turn == 0]
    assert len(starts) == pytest.approx(2.0 * 510, rel=0.1)
    assert s.sessions.window_end_s == 510.0
    assert all(r.think_s == 0.0 for r in s.requests if r.turn == 0)
    later = [r.think_s for r in s.requests if r.turn > 0]
    assert np.mean(later) == pytest.approx(5.0, rel=0.1)
    faster = resolve(sc, Overrides(rate_rps=12.0))
    assert faster.sessions.rate_rps == pytest.approx(4.0) and faster.target_rps == pytest.approx(12.0)
    with pytest.raises(ScenarioError, match="applies only to closed-loop"):
        resolve(sc, Overrides(concurrency=3))
    closed = _sc({"users": 2, "sessions_per_user": 1, "think_s": 1}, TURNS3)
    with pytest.raises(ScenarioError, match="--concurrency"):
        resolve(closed, Overrides(rate_rps=3.0))


def test_more_sessions_do_not_change_the_lengths_of_the_first_ones():
    sc = _sc({"rate_rps": 1.0, "think_s": 5.0},
             {"turns": {"dist": "uniform", "min": 1, "max": 6}, "first_tokens": {"dist": "uniform", "min": 50, "max": 90}})
    sc = sc.model_copy(update={"workload": sc.workload.model_copy(
        update={"input": scenario_from_dict({"name": "x", "description": "only to build a length spec here",
                                             "workload": {"input": {"dist": "uniform", "min": 1, "max": 40},
                                                          "output": {"dist": "fixed", "value": 1}},
                                             "arrival": {"process": "poisson", "rate_rps": 1}}).workload.input})})
    slow, fast = build_schedule(sc, seed=4), build_schedule(sc, seed=4, overrides=Overrides(rate_rps=20.0))
    n = len(slow.requests)
    assert [(r.n_in, r.n_out, r.turn, r.think_s) for r in fast.requests[:n]] == \
        [(r.n_in, r.n_out, r.turn, r.think_s) for r in slow.requests]
    assert all(50 <= r.n_in <= 90 for r in slow.requests if r.turn == 0)  # the first message has its own lengths
    assert all(1 <= r.n_in <= 40 for r in slow.requests if r.turn > 0)


def test_max_requests_caps_turns_cutting_the_last_session_short():
    sc = _sc({"users": 3, "sessions_per_user": 10, "think_s": 1.0}, TURNS3)
    s = build_schedule(sc, overrides=Overrides(max_requests=10))
    assert len(s.requests) == 10 and s.sessions.n_sessions == 4
    assert [r.turn for r in s.requests[-2:]] == [2, 0]


def test_chat_multiturn_reproduces_the_published_turn_statistics():
    """WildChat: 59% single-turn conversations, 3.7% over 10 turns, 2.52 turns on average."""
    sc = load_scenario("chat-multiturn")
    s = build_schedule(sc, seed=0, overrides=Overrides(full_scale=True, duration_s=5000.0))
    turns = np.bincount([r.session_id for r in s.requests])
    assert len(turns) > 10_000
    assert (turns == 1).mean() == pytest.approx(0.59, rel=0.05)
    assert turns.mean() == pytest.approx(2.52, rel=0.05)
    assert (turns > 10).mean() == pytest.approx(0.037, rel=0.15)  # the lognormal's tail is a little thinner
    later = [r.n_in for r in s.requests if r.turn > 0]
    out = [r.n_out for r in s.requests]
    assert np.mean(later) == pytest.approx(295.58, rel=0.1) and np.median(later) == pytest.approx(53.5, rel=0.1)
    assert np.mean(out) == pytest.approx(441.34, rel=0.1) and np.median(out) == pytest.approx(323, rel=0.1)


def test_an_arrival_or_a_sessions_block_is_needed():
    with pytest.raises(ScenarioError, match="give an `arrival` process, or a `sessions` block"):
        scenario_from_dict({"name": "x", "description": "neither arrivals nor sessions are given here",
                            "workload": {"input": {"dist": "fixed", "value": 1}, "output": {"dist": "fixed", "value": 1}}})


def test_new_tokens_set_later_messages_and_pairs_give_the_answers(tmp_path):
    """Later turns' messages come from `new_tokens`; with a pairs workload, answers are its output side."""
    from scenarios.pairs import Pairs, write_pairs

    write_pairs(tmp_path / "p.csv.gz", Pairs(np.array([100, 200]), np.array([7, 9]), np.array([1, 1]), ((), ())),
                ["test pairs"])
    sc = scenario_from_dict({"name": "conv", "description": "multi-turn conversations over observed pairs",
                             "workload": {"pairs": {"file": str(tmp_path / "p.csv.gz")}},
                             "sessions": {"rate_rps": 2.0, "think_s": 1.0, **TURNS3,
                                          "first_tokens": {"dist": "fixed", "value": 300},
                                          "new_tokens": {"dist": "uniform", "min": 5, "max": 15}},
                             "duration_s": 60.0})
    s = build_schedule(sc, seed=5)
    assert {r.n_in for r in s.requests if r.turn == 0} == {300}
    assert all(5 <= r.n_in <= 15 for r in s.requests if r.turn > 0)
    assert {r.n_out for r in s.requests} == {7, 9}
