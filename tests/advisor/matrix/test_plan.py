"""Plan files: defaults, grids and every kind of bad input, each one line naming the cell and the fix."""

from __future__ import annotations

import pytest

from advisor.matrix.plan import PlanError, load_plan, plan_from_dict
from scenarios.catalog import SCENARIO_DIR
from tests.advisor.matrix.plans import write_plan


def test_defaults_grid_and_overrides(tmp_path):
    plan = load_plan(write_plan(tmp_path, [
        {"name": "one", "rate": 4},
        {"name": "g", "rates": [1, 2], "grid": {"options.tpot_ms": [1, 2], "scenario": ["chat", "copilot"]}},
    ]))
    assert [c.name for c in plan.cells] == ["one", "g-1-chat", "g-1-copilot", "g-2-chat", "g-2-copilot"]
    one = plan.cell("one")
    assert not one.is_sweep and one.overrides().rate_rps == 4 and one.overrides().duration_s == 1.0
    g = plan.cell("g-2-copilot")
    assert g.is_sweep and g.rates == (1, 2) and g.scenario == "copilot"
    assert g.options == {"ttft_ms": 5, "tpot_ms": 2}  # the grid set one option, the default kept the other
    assert one.requirement() == {"CPU": 1.0}


def test_requirement_counts_what_ray_counts():
    plan = plan_from_dict({"cells": [{"engine": "fake", "scenario": "chat", "resources": {"CPU": 2, "GPU": 1, "pool": 1},
                                      "accelerator": "H100"}]})
    assert plan.cells[0].requirement() == {"CPU": 2, "GPU": 1, "pool": 1, "accelerator_type:H100": 0.001}


def test_a_scenario_file_resolves_beside_the_plan(tmp_path):
    (tmp_path / "sc").mkdir()
    (tmp_path / "sc" / "mine.yaml").write_text((SCENARIO_DIR / "chat.yaml").read_text())
    plan = load_plan(write_plan(tmp_path, [{"name": "a", "scenario": "sc/mine.yaml"}]))
    assert plan.cell("a").scenario == str(tmp_path / "sc" / "mine.yaml")


def test_every_problem_is_one_line(tmp_path):
    path = write_plan(tmp_path, [
        {"name": "e", "engine": "nope"},
        {"name": "s", "scenario": "nonesuch"},
        {"name": "k", "enigne": "fake"},
        {"name": "r", "rates": [1], "rate": 2},
        {"name": "o", "duration": -1},
        {"name": "gpu", "resources": {"gpu": 1}},
        {"name": "dup"}, {"name": "dup"},
    ])
    with pytest.raises(PlanError) as e:
        load_plan(path)
    lines = e.value.problems
    assert any(line.startswith("cell 'e': unknown engine 'nope'; choose one of") and "fake" in line for line in lines)
    assert any(line.startswith("cell 's': unknown scenario 'nonesuch'") for line in lines)
    assert any(line.startswith("cell 'k': unknown key 'enigne'") for line in lines)
    assert any(line.startswith("cell 'r': give `rates:`") for line in lines)
    assert any(line.startswith("cell 'o': duration must be") for line in lines)  # the plan's key, not the CLI flag
    assert any("unknown resource 'gpu'" in line and "did you mean 'GPU'" in line for line in lines)
    assert any(line.startswith("cell 'dup': the name is used twice") for line in lines)
    assert len(lines) == 7 and all("\n" not in line for line in lines)


@pytest.mark.parametrize("data, needle", [
    ({}, "non-empty `cells:`"),
    ({"cells": []}, "non-empty `cells:`"),
    ({"cells": [{"engine": "fake", "scenario": "chat"}], "cellz": 1}, "unknown key 'cellz'"),
    ({"cells": ["fake"]}, "must be a mapping"),
    ({"cells": [{"engine": "fake", "scenario": "chat", "gird": {}}]}, r"a cell has: .*, labels, grid\)"),
    ({"cells": [{"engine": "fake", "scenario": "chat", "grid": {"engine": []}}]}, "`grid:` must map keys"),
])
def test_malformed_plans(data, needle):
    with pytest.raises(PlanError, match=needle):
        plan_from_dict(data)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(PlanError, match="does not exist"):
        load_plan(tmp_path / "none.yaml")
    with pytest.raises(PlanError, match="is a folder, not a plan file"):  # it exists: "does not exist" misled
        load_plan(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("cells: [\n")
    with pytest.raises(PlanError, match="malformed YAML"):
        load_plan(bad)


def test_a_cells_workers_hold_a_core_each_and_only_a_served_engine_gets_several(tmp_path):
    from advisor.matrix.cell import _auto_cap

    served = {"engine": "openai", "options": {"url": "http://127.0.0.1:9"}}
    plan = load_plan(write_plan(tmp_path, [{"name": "w3", "workers": 3, **served}, {"name": "auto", **served},
                                           {"name": "inproc"}]))
    assert plan.cell("w3").requirement()["CPU"] == 3.0 and plan.cell("auto").cpus() == 1.0
    assert _auto_cap(plan.cell("w3"), cpus_held=8) is None  # asked for: given
    assert _auto_cap(plan.cell("auto"), cpus_held=None) is None  # here: as `advisor bench`, by affinity
    assert _auto_cap(plan.cell("auto"), cpus_held=1) == 1  # on Ray: no more than the CPUs the cell holds
    assert _auto_cap(plan.cell("auto"), cpus_held=2.5) == 2
    with pytest.raises(PlanError) as e:
        load_plan(write_plan(tmp_path, [{"name": "zero", "workers": 0, **served},
                                        {"name": "few", "workers": 4, "resources": {"CPU": 2}, **served},
                                        {"name": "fake2", "workers": 2}]))
    assert e.value.problems == [
        "cell 'zero': workers must be 'auto', an integer >= 1 or ray:N (N Ray actors), got 0",
        "cell 'few': workers: 4 needs resources.CPU >= 4 (a core per worker), got 2",
        "cell 'fake2': workers: 2, but only a served engine (openai) is driven by several processes; 'fake' runs in "
        "advisor and keeps one driver: drop `workers:`"]


def test_every_run_of_a_cell_is_checked_as_it_will_run(tmp_path):
    with pytest.raises(PlanError) as e:
        load_plan(write_plan(tmp_path, [
            {"name": "big", "scenario": "copilot", "rates": [1, 2000000]},
            {"name": "closed", "scenario": "chat-closed", "rates": [1, 2]},
            {"name": "closed1", "scenario": "chat-closed", "rate": 2},
            {"name": "open1", "scenario": "copilot", "concurrency": 2},
            {"name": "many", "rates": list(range(1, 53))},
            {"name": "fine", "scenario": "chat-closed", "concurrency": 2},
        ]))
    assert e.value.problems == [
        "cell 'big': `rates:` must each be at most 1e+06 req/s, got 2e+06",
        "cell 'closed': rates does not apply to the closed scenario 'chat-closed'; use concurrency (closed) or "
        "max_requests (offline)",
        "cell 'closed1': rate does not apply to the closed scenario 'chat-closed'; use concurrency (closed) or "
        "max_requests (offline)",
        "cell 'open1': concurrency applies only to closed-loop scenarios; 'copilot' is gamma: use rate instead",
        "cell 'many': `rates:` may list at most 50 rates, got 52"]


def test_a_simulated_device_is_checked_with_the_plan(tmp_path):
    with pytest.raises(PlanError) as e:
        load_plan(write_plan(tmp_path, [{"name": "bogus", "engine": "own", "options": {"device": "sim:bogus"}},
                                        {"name": "static", "engine": "own-static", "options": {"device": "sim"}},
                                        {"name": "ok", "engine": "own", "options": {"device": "sim:h200"}}]))
    lines = e.value.problems
    assert len(lines) == 2, lines
    assert lines[0].startswith("cell 'bogus': bad option for engine 'own': device (--device): Value error, unknown "
                               "simulated device 'sim:bogus'; use sim:h200")
    assert lines[1].startswith("cell 'static': bad option for engine 'own-static': device (--device): Value error, a "
                               "simulated device runs the continuous engine only: use --engine own")


def test_an_unknown_key_does_not_hide_the_cells_other_problems(tmp_path):
    with pytest.raises(PlanError) as e:
        load_plan(write_plan(tmp_path, [{"name": "k", "bogus": 1, "scenario": "nonesuch", "rate": -1}]))
    lines = e.value.problems
    assert len(lines) == 3, lines
    assert lines[0].startswith("cell 'k': unknown key 'bogus'")
    assert lines[1].startswith("cell 'k': unknown scenario 'nonesuch'")
    assert lines[2] == "cell 'k': rate must be a finite number > 0, got -1.0"
