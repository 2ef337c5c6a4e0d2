"""Every YAML advisor reads names the file in its errors; duplicate keys are refused, not silently overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.matrix.plan import PlanError, load_plan
from advisor.recommend.constraints import Constraints, ConstraintsError
from scenarios.catalog import load_scenario
from scenarios.errors import ScenarioError

SCENARIO = """name: dup
description: A scenario with one key given twice, which must be refused.
workload:
  input: {dist: fixed, value: 16}
  output: {dist: fixed, value: 8}
arrival: {process: constant, rate_rps: 2}
duration_s: 10
duration_s: 600
"""


def test_a_scenario_that_is_not_utf8_names_the_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "latin1.yaml"
    p.write_bytes(SCENARIO.replace("duration_s: 600\n", "").encode() + "# caf\xe9\n".encode("latin-1"))
    with pytest.raises(ScenarioError, match=rf"{p}, line 8: not UTF-8 text \(byte 0xe9\)"):
        load_scenario(p)


def test_duplicate_keys_are_refused_naming_both_lines(tmp_path: Path) -> None:
    p = tmp_path / "dup.yaml"
    p.write_text(SCENARIO)
    with pytest.raises(ScenarioError, match=rf"{p}, line 8: .*duplicate key 'duration_s' \(first on line 7, "
                                            "again on line 8\\)"):
        load_scenario(p)


def test_plans_and_constraints_refuse_duplicate_keys_too(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("name: m\ncells:\n  - {name: a, engine: fake, rate: 1, rate: 2}\n")
    with pytest.raises(PlanError, match=f"{plan}.*duplicate key 'rate'"):
        load_plan(plan)
    c = tmp_path / "c.yaml"
    c.write_text("peak_rps: 10\npeak_rps: 1000\n")
    with pytest.raises(ConstraintsError, match=f"{c}.*duplicate key 'peak_rps'"):
        Constraints.from_yaml(c)
