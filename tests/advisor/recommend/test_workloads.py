"""Like with like: runs of one scenario at two length scales are never pooled (issue 26, item 6)."""

from __future__ import annotations

import pytest

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
from advisor.recommend.workloads import group_workloads
from tests.advisor.recommend.runs import loaded, make_run


def _at_scale(run_id: str, scale: float, rps: float, n_in: int, n_out: int, created: str = "2026-11-21T21:30:00Z"):
    r = make_run(run_id, scenario="chat", rps=rps, n_in=n_in, n_out=n_out)
    r["created_utc"] = created
    r["schedule"]["effective"] = {"length_scale": scale, "max_input_tokens": None, "max_output_tokens": None}
    return r


def test_two_length_scales_are_never_pooled():
    full = _at_scale("full", 1.0, rps=2.0, n_in=1000, n_out=200)
    short = _at_scale("short", 0.25, rps=4.0, n_in=250, n_out=50, created="2026-11-22T00:00:00Z")
    rec = recommend(loaded([full, short]), Constraints(peak_rps=2, include_estimates=False), load_catalog())
    measured = [r for r in rec.rows if r.candidate.source == "measured"]
    assert [r.candidate.run_id for r in measured] == ["full"]  # the scenario's own lengths, not the faster short run
    best = rec.best
    assert best is not None and best.candidate.capacity_rps == pytest.approx(2.0)
    assert best.replicas == 2  # ceil(2 x 1.2 / 2); pooled with the short run it read 1
    assert any("sized for one workload" in w and "at its own lengths" in w for w in rec.warnings)
    assert any("run short left out" in n and "length_scale 0.25" in n for n in rec.notes)


def test_realised_lengths_split_a_workload_and_same_settings_stay_together():
    a = _at_scale("a", 1.0, rps=2.0, n_in=1000, n_out=200)
    b = _at_scale("b", 1.0, rps=3.0, n_in=1050, n_out=190)  # within 25%: the same workload
    c = _at_scale("c", 1.0, rps=6.0, n_in=1000, n_out=40)  # an engine that stopped early: another workload
    groups = group_workloads(loaded([a, b, c]))
    assert [[r.run_id for r in g.runs] for g in groups] == [["a", "b"], ["c"]]
    rec = recommend(loaded([a, b, c]), Constraints(peak_rps=2, include_estimates=False), load_catalog())
    assert {r.candidate.run_id for r in rec.rows} <= {"a", "b"}
    assert any("run c left out" in n for n in rec.notes)
