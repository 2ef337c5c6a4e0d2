"""A random arrival process is drawn at its stated rate or refused: no 2.5 req/s scenario sends thousands a second."""

from __future__ import annotations

import pytest

from scenarios.catalog import scenario_from_dict
from scenarios.errors import ScenarioError
from scenarios.schedule import Overrides, build_schedule

BASE = {"name": "t", "description": "a scenario for the arrival-rate tests",
        "workload": {"input": {"dist": "fixed", "value": 8}, "output": {"dist": "fixed", "value": 4}},
        "duration_s": 55, "warmup_s": 5}


@pytest.mark.parametrize("seed", range(8))
def test_a_gap_cv_of_100_is_refused_with_what_it_drew(seed: int) -> None:
    """Gamma gaps of CV 100 at 2.5 req/s: a minute holds nothing or thousands of requests (issue 40's on_cv 100)."""
    s = scenario_from_dict({**BASE, "arrival": {"process": "gamma", "rate_rps": 2.5, "cv": 100}})
    with pytest.raises(ScenarioError, match=r"drew [\d,]+ requests in the 60 s window, where its mean rate of 2.5 "
                                            r"req/s gives 150 \(±816% from its own gap CV.*too bursty"):
        build_schedule(s, seed)


def test_an_onoff_of_on_cv_100_from_the_old_mooncake_fit_is_refused() -> None:
    s = scenario_from_dict({**BASE, "arrival": {"process": "onoff", "on_rate_rps": 2048.0, "on_cv": 73.7,
                                                "on_s": 0.005056, "off_s": 3.0, "phase_cv": 10.0, "off_cv": 0.0115},
                            "fit": {"rate_rps": 2.5}})
    for seed in range(8):  # before: 73 to 3,979 requests over seeds 0-7
        with pytest.raises(ScenarioError, match=r"±\d+% from its own gap CV"):
            build_schedule(s, seed)


@pytest.mark.parametrize("arrival", [{"process": "poisson", "rate_rps": 2.5}, {"process": "gamma", "rate_rps": 2.5,
                                     "cv": 3}, {"process": "batched", "batch_size": 10, "period_s": 4}])
def test_ordinary_processes_are_drawn_near_their_rate(arrival: dict) -> None:
    s = scenario_from_dict({**BASE, "arrival": arrival})
    for seed in range(8):
        assert 60 <= len(build_schedule(s, seed).requests) <= 300


def test_a_short_window_is_not_judged_and_a_cap_is_not_a_miss() -> None:
    s = scenario_from_dict({**BASE, "arrival": {"process": "gamma", "rate_rps": 2.5, "cv": 100}})
    build_schedule(s, 0, Overrides(duration_s=2, warmup_s=0))  # 5 expected: too few to judge
    assert len(build_schedule(s, 0, Overrides(max_requests=10)).requests) <= 10


def test_batched_rate_override_keeps_the_group_size() -> None:
    s = scenario_from_dict({**BASE, "arrival": {"process": "batched", "batch_size": 10, "period_s": 3,
                                                "size_cv": 0.2}})
    a = build_schedule(s, 0, Overrides(rate_rps=2.5)).settings.arrival
    assert a.batch_size == 10 and a.period_s == pytest.approx(4.0) and a.size_cv == 0.2
