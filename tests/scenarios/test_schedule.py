from __future__ import annotations

import numpy as np
import pytest

from scenarios.catalog import load_scenario, scenario_from_dict
from scenarios.errors import ScenarioError
from scenarios.schedule import Overrides, build_schedule, resolve

BASE = {
    "name": "unit",
    "description": "A scenario made up for the unit tests of the schedule builder.",
    "workload": {"input": {"dist": "lognormal", "mean": 300, "median": 200, "min": 1, "max": 4000},
                 "output": {"dist": "uniform", "min": 10, "max": 50}},
    "arrival": {"process": "poisson", "rate_rps": 10.0},
    "duration_s": 100, "warmup_s": 10,
    "slos": {"ttft_ms": 500, "tpot_ms": 50},
    "fit": {"rate_rps": 2.0, "duration_s": 20, "warmup_s": 2, "max_input_tokens": 256},
}


def _scenario(**changes):
    return scenario_from_dict({**BASE, **changes})


def test_same_inputs_same_schedule_other_seed_other_schedule() -> None:
    s = _scenario()
    ov = Overrides(length_scale=0.5)
    a, b = build_schedule(s, 3, ov), build_schedule(_scenario(), 3, ov)
    assert a == b
    c = build_schedule(s, 4, ov)
    assert c.requests != a.requests
    assert c.seed == 4


def test_fit_applies_unless_full_scale() -> None:
    s = _scenario()
    fitted = build_schedule(s)
    assert (fitted.warmup_s, fitted.duration_s) == (2, 20)
    assert max(r.n_in for r in fitted.requests) <= 256
    assert all(r.t_sched_s < 22 for r in fitted.requests)
    assert resolve(s).target_rps == 2.0 and resolve(s).fitted
    full = build_schedule(s, overrides=Overrides(full_scale=True))
    assert (full.warmup_s, full.duration_s) == (10, 100)
    assert len(full.requests) == pytest.approx(10 * 110, rel=0.1)
    assert full.overrides == Overrides(full_scale=True)


def test_overrides_win_over_fit_and_are_recorded() -> None:
    ov = Overrides(rate_rps=20.0, duration_s=30, warmup_s=0, max_input_tokens=100, max_output_tokens=12)
    sch = build_schedule(_scenario(), overrides=ov)
    assert len(sch.requests) == pytest.approx(600, rel=0.15)
    assert max(r.n_in for r in sch.requests) <= 100 and max(r.n_out for r in sch.requests) <= 12
    assert not any(r.warmup for r in sch.requests)
    assert sch.overrides is ov and sch.overrides.as_dict() == {
        "rate_rps": 20.0, "duration_s": 30, "warmup_s": 0, "max_input_tokens": 100, "max_output_tokens": 12}


def test_warmup_flags_follow_time() -> None:
    sch = build_schedule(_scenario(), overrides=Overrides(full_scale=True))
    assert all(r.warmup == (r.t_sched_s < 10) for r in sch.requests)
    assert sch.window_s == (10, 110)


def test_rate_override_keeps_each_requests_lengths() -> None:
    s = _scenario()
    slow = build_schedule(s, overrides=Overrides(rate_rps=1.0, full_scale=True))
    fast = build_schedule(s, overrides=Overrides(rate_rps=50.0, full_scale=True))
    n = len(slow.requests)
    assert [(r.n_in, r.n_out) for r in slow.requests] == [(r.n_in, r.n_out) for r in fast.requests[:n]]


def test_max_requests_and_length_scale() -> None:
    s = _scenario()
    base = build_schedule(s, overrides=Overrides(full_scale=True, max_requests=50))
    assert len(base.requests) == 50
    half = build_schedule(s, overrides=Overrides(full_scale=True, max_requests=50, length_scale=0.5))
    ratio = np.mean([r.n_in for r in half.requests]) / np.mean([r.n_in for r in base.requests])
    assert ratio == pytest.approx(0.5, rel=0.02)


def test_onoff_rate_override_scales_the_mean_rate() -> None:
    s = _scenario(arrival={"process": "onoff", "on_rate_rps": 12, "on_s": 5, "off_s": 10})
    st = resolve(s, Overrides(rate_rps=1.0, full_scale=True))
    assert st.target_rps == pytest.approx(1.0)
    assert st.arrival.on_rate_rps == pytest.approx(3.0)


@pytest.mark.parametrize(("kwargs", "flag"), [
    ({"rate_rps": -1.0}, "--rate"), ({"rate_rps": 0.0}, "--rate"), ({"duration_s": float("nan")}, "--duration"),
    ({"concurrency": 0}, "--concurrency"), ({"max_requests": 0}, "--max-requests"),
    ({"length_scale": 0.0}, "--length-scale"), ({"max_input_tokens": -5}, "--max-input-tokens"),
    ({"warmup_s": -1.0}, "--warmup"), ({"seed": -1}, "--seed"),
])
def test_impossible_overrides_are_rejected(kwargs: dict, flag: str) -> None:
    with pytest.raises(ValueError, match=flag):
        Overrides(**kwargs)


def test_overrides_that_do_not_fit_the_process_are_rejected() -> None:
    with pytest.raises(ScenarioError, match="--concurrency applies only to closed-loop"):
        build_schedule(_scenario(), overrides=Overrides(concurrency=4))
    batch = load_scenario("batch")
    with pytest.raises(ScenarioError, match="--rate does not apply"):
        build_schedule(batch, overrides=Overrides(rate_rps=3.0))
    with pytest.raises(ScenarioError, match="--max-requests"):
        build_schedule(batch, overrides=Overrides(duration_s=3.0))


def test_runaway_schedule_is_refused() -> None:
    with pytest.raises(ScenarioError, match="--max-requests"):
        build_schedule(_scenario(), overrides=Overrides(rate_rps=1e6, duration_s=1e4))


def test_offline_is_everything_at_zero() -> None:
    sch = build_schedule(load_scenario("batch"), overrides=Overrides(full_scale=True, max_requests=40))
    assert sch.mode == "offline" and len(sch.requests) == 40
    assert {r.t_sched_s for r in sch.requests} == {0.0}


def test_closed_loop_concurrency_and_duration() -> None:
    s = load_scenario("chat-closed")
    sch = build_schedule(s, overrides=Overrides(full_scale=True))
    a = s.arrival
    assert sch.mode == "closed" and sch.concurrency == a.concurrency
    assert len(sch.requests) == a.concurrency * a.requests_per_user
    assert all(r.t_sched_s == 0.0 for r in sch.requests)
    assert sum(r.warmup for r in sch.requests) % a.concurrency == 0  # whole first rounds of every user
    half = build_schedule(s, overrides=Overrides(full_scale=True, concurrency=3,
                                                 duration_s=(s.warmup_s + s.duration_s) / 2 - s.warmup_s))
    assert half.concurrency == 3
    assert len(half.requests) == 3 * round(a.requests_per_user / 2)


def test_trace_workload_lengths_and_prefix_blocks_follow_the_trace() -> None:
    s = load_scenario("mooncake-sample")
    sch = build_schedule(s, overrides=Overrides(full_scale=True))
    assert len(sch.requests) == 189
    shared = [r for r in sch.requests if r.prefix_blocks]
    assert shared and all(len(r.prefix_blocks) == r.n_in // 512 for r in shared)
    scaled = build_schedule(s, overrides=Overrides(full_scale=True, length_scale=0.25))
    assert all(len(r.prefix_blocks) * 512 <= r.n_in for r in scaled.requests)
