"""A run on own_engine's simulated device (own_engine.core.sim_device) is no hardware's: never a candidate."""

from __future__ import annotations

from advisor.catalog.loader import load_catalog
from advisor.recommend.recommendation import resolve_runs
from tests.advisor.recommend.runs import loaded, make_run


def test_simulated_device_runs_are_left_out_of_the_candidates() -> None:
    real, sim = make_run("real"), make_run("sim")
    sim["engine"]["device"] = "sim:h200 (SIMULATED step times, not hardware)"
    sim["engine"]["extra"]["simulated_device"] = {"name": "h200"}
    resolved = resolve_runs(loaded([real, sim]), load_catalog(), None)
    assert [mr.run.run_id for mr in resolved] == ["real"]
