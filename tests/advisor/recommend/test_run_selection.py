"""`select_runs`: the runs a recommendation and a report rest on, and each run left out with why."""

from __future__ import annotations

from advisor.catalog.loader import load_catalog
from advisor.recommend import Constraints, recommend
from advisor.recommend.render import print_recommendation
from advisor.recommend.run_selection import select_runs
from tests.advisor.recommend.runs import loaded, make_run


def _sim(run_id: str) -> dict:
    d = make_run(run_id)
    d["engine"]["device"] = "sim:h200 (SIMULATED step times, not hardware)"
    d["engine"]["extra"]["simulated_device"] = {"name": "h200"}
    return d


def _scaled(run_id: str, scenario: str) -> dict:
    d = make_run(run_id, scenario=scenario, n_in=64, n_out=16)
    d["schedule"]["overrides"] = {"length_scale": 0.25}
    return d


def test_a_simulated_device_is_left_out_next_to_real_hardware_and_kept_alone():
    both = select_runs(loaded([make_run("real"), _sim("sim")]))
    assert both.included_ids == ("real",)
    assert [(x.run_id, x.kind) for x in both.left_out] == [("sim", "buys nothing")]
    assert "simulated device left out: its step times are no hardware's" in str(both.test_note)
    alone = select_runs(loaded([_sim("sim")]))
    assert alone.included_ids == ("sim",) and "not what to buy" in str(alone.test_note)


def test_the_fake_engine_is_left_out_even_when_it_is_a_scenario_of_its_own():
    # the report without a scenario: the fake's scenario would otherwise put ~1e5 tokens/s per user on the frontier
    chosen = select_runs(loaded([make_run("f", engine="fake", scenario="chat"), make_run("o", scenario="rag")]))
    assert chosen.included_ids == ("o",) and chosen.scenarios == ("rag",)


def test_each_scenario_keeps_its_own_sized_workload():
    runs = loaded([make_run("c1", scenario="chat"), _scaled("c2", "chat"),
                   make_run("r1", scenario="rag"), _scaled("r2", "rag")])
    chosen = select_runs(runs)
    assert chosen.included_ids == ("c1", "r1")
    assert [(x.run_id, x.kind) for x in chosen.left_out] == [("c2", "workload"), ("r2", "workload")]
    assert len(chosen.workload_notes) == 2 and "length_scale 0.25" in chosen.left_out[0].reason


def test_a_run_that_is_not_valid_stays_and_another_scenario_is_named():
    runs = loaded([make_run("v"), make_run("bad", status="INVALID"), make_run("other", scenario="rag")])
    chosen = select_runs(runs, "copilot")
    assert chosen.included_ids == ("v", "bad") and chosen.held_scenarios == ("copilot", "rag")
    assert [x.line() for x in chosen.left_out] == [
        "run other left out: it ran scenario 'rag', not the scenario asked for ('copilot')"]


def test_the_recommendation_carries_the_selection_and_the_console_names_other_scenarios(capsys):
    runs = loaded([make_run("v"), make_run("f", engine="fake"), make_run("other", scenario="rag")])
    rec = recommend(runs, Constraints(scenario="copilot", include_estimates=False), load_catalog())
    assert rec.runs_used == ("v",)
    assert rec.to_dict()["left_out"] == [
        {"run_id": "other", "kind": "scenario", "reason": "it ran scenario 'rag', not the scenario asked for ('copilot')"},
        {"run_id": "f", "kind": "buys nothing", "reason": "a run of the test engine 'fake': it serves no model"}]
    from rich.console import Console

    print_recommendation(rec, Console(width=300))
    out = capsys.readouterr().out
    assert "1 run(s) of other scenarios left out (scenario 'copilot' asked for): other" in out
    assert "1 run(s) of the test engine 'fake' left out: it serves no model" in out
