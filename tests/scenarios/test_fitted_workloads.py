"""What a fitted scenario uses: joint length pairs, correlated lognormal lengths, a rate profile, sessions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from scenarios.catalog import load_scenario, scenario_from_dict
from scenarios.errors import ScenarioError
from scenarios.pairs import HEADER, Pairs, read_pairs, write_pairs
from scenarios.schedule import Overrides, build_schedule, resolve

BASE = {"name": "mine", "description": "A scenario fitted from a log for the tests here."}


def _pairs(tmp_path: Path) -> Path:
    p = tmp_path / "mine.pairs.csv.gz"
    write_pairs(p, Pairs(np.array([100, 2000, 600]), np.array([10, 300, 50]), np.array([3, 1, 1]),
                         ((), (0, 1, 2), (0,))), ["test pairs"])
    return p


def _write(tmp_path: Path, doc: dict) -> Path:
    p = tmp_path / "mine.yaml"
    p.write_text(yaml.safe_dump({**BASE, **doc}))
    return p


def test_pairs_round_trip_and_bad_rows(tmp_path: Path) -> None:
    p = _pairs(tmp_path)
    got = read_pairs(p)
    assert got.n_in.tolist() == [100, 2000, 600] and got.count.tolist() == [3, 1, 1]
    assert got.prefix == ((), (0, 1, 2), (0,)) and got.n_requests == 5
    bad = tmp_path / "bad.pairs.csv"
    bad.write_text(f"# c\n{HEADER}\n10,2,1,\n10,-2,1,\n")
    with pytest.raises(ScenarioError, match=r"bad.pairs.csv, line 4: .*>= 1"):
        read_pairs(bad)


def test_pairs_are_drawn_whole_with_their_weights_and_prefixes(tmp_path: Path) -> None:
    _pairs(tmp_path)
    s = load_scenario(_write(tmp_path, {"workload": {"pairs": {"file": "mine.pairs.csv.gz"}},
                                        "arrival": {"process": "poisson", "rate_rps": 100.0}, "duration_s": 100}))
    reqs = build_schedule(s, 0).requests
    rows = {(r.n_in, r.n_out, r.prefix_blocks) for r in reqs}
    assert rows == {(100, 10, ()), (2000, 300, (0, 1, 2)), (600, 50, (0,))}  # whole 512-token blocks only
    share = np.mean([r.n_in == 100 for r in reqs])
    assert share == pytest.approx(0.6, abs=0.03)
    assert build_schedule(s, 0).requests == reqs  # deterministic


def test_correlated_lognormal_lengths(tmp_path: Path) -> None:
    doc = {"workload": {"input": {"dist": "lognormal", "mean": 1200, "median": 900, "min": 1, "max": 20000},
                        "output": {"dist": "lognormal", "mean": 200, "median": 120, "min": 1, "max": 4000},
                        "log_correlation": 0.6},
           "arrival": {"process": "poisson", "rate_rps": 50.0}, "duration_s": 400}
    reqs = build_schedule(scenario_from_dict({**BASE, **doc}), 0).requests
    a, b = np.log([r.n_in for r in reqs]), np.log([r.n_out for r in reqs])
    assert np.corrcoef(a, b)[0, 1] == pytest.approx(0.6, abs=0.03)
    assert np.mean([r.n_in for r in reqs]) == pytest.approx(1200, rel=0.05)
    with pytest.raises(ScenarioError, match="log_correlation` needs lognormal"):
        scenario_from_dict({**BASE, **doc, "workload": {**doc["workload"], "input": {"dist": "fixed", "value": 5}}})


def _profile_doc(**kw) -> dict:
    return {"workload": {"input": {"dist": "fixed", "value": 10}, "output": {"dist": "fixed", "value": 5}},
            "arrival": {"process": "profile", "step_s": 3600, "rates_rps": [1.0, 3.0, 2.0, 2.0], "cv": 1.0},
            "duration_s": 4 * 3600, **kw}


def test_profile_is_compressed_into_a_shorter_run_and_says_so() -> None:
    s = scenario_from_dict({**BASE, **_profile_doc()})
    assert resolve(s, Overrides(full_scale=True)).notes == ()
    st = resolve(s, Overrides(duration_s=240, warmup_s=0))
    assert st.arrival.step_s == pytest.approx(60.0)  # 4 h into 4 min: each hour becomes a minute
    assert any("compressed 60x" in n and "--duration 14400" in n for n in st.notes)
    assert st.target_rps == pytest.approx(2.0)
    t = np.array([r.t_sched_s for r in build_schedule(s, 0, Overrides(duration_s=2400, warmup_s=0)).requests])
    per_step = np.bincount((t // 600).astype(int), minlength=4)[:4] / 600  # 4 h into 40 min
    assert per_step == pytest.approx([1.0, 3.0, 2.0, 2.0], rel=0.15)


def test_rate_scales_a_profile_keeping_its_shape() -> None:
    s = scenario_from_dict({**BASE, **_profile_doc()})
    st = resolve(s, Overrides(rate_rps=4.0, full_scale=True))
    assert st.arrival.rates_rps == pytest.approx((2.0, 6.0, 4.0, 4.0))
    assert st.target_rps == pytest.approx(4.0)


def test_a_profile_needs_traffic() -> None:
    with pytest.raises(ScenarioError, match="at least one rate > 0"):
        scenario_from_dict({**BASE, **_profile_doc(arrival={"process": "profile", "step_s": 60, "rates_rps": [0, 0]})})


def test_a_fitted_sessions_block_drives_a_multi_turn_schedule() -> None:
    sessions = {"rate_rps": 0.2, "turns": {"dist": "lognormal", "mean": 4, "median": 3, "min": 1, "max": 30},
                "think_s": 10.0, "think_cv": 1.0, "new_tokens": {"dist": "uniform", "min": 10, "max": 90}}
    doc = {k: v for k, v in _profile_doc(sessions=sessions).items() if k != "arrival"}
    s = scenario_from_dict({**BASE, **doc})
    assert s.sessions is not None and s.sessions.turns.mean == 4
    st = resolve(s, Overrides(full_scale=True))
    assert st.arrival is None and st.mode == "open" and st.target_rps == pytest.approx(0.8)  # 0.2/s x 4 turns
    sched = build_schedule(s, overrides=Overrides(full_scale=True, duration_s=600, warmup_s=0))
    assert sched.sessions is not None and sched.sessions.n_sessions > 0
    assert all(10 <= r.n_in <= 90 for r in sched.requests if r.turn > 0)
    with pytest.raises(ScenarioError, match="remove `arrival`"):  # one thing decides when requests go out
        scenario_from_dict({**BASE, **_profile_doc(sessions=sessions)})
    with pytest.raises(ScenarioError, match="exactly one of `rate_rps`"):
        scenario_from_dict({**BASE, **doc, "sessions": {**sessions, "users": 8}})
    with pytest.raises(ScenarioError, match="unknown key 'sessions.turn'"):
        scenario_from_dict({**BASE, **doc, "sessions": {**sessions, "turn": 3}})
