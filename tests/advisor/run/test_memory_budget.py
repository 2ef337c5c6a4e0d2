"""A run's plan is sized before anything starts: in-range values whose product is unbounded are refused (issue 40, 6).

`bench --engine fake --rate 1e6 --duration 1e7 --max-requests 1000000 --length-scale 100 --max-input-tokens
1000000 --max-output-tokens 1000` reached 2.5 GB in 21 s and kept rising; each value alone is allowed.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest
from click.testing import CliRunner

from advisor.run import bench, memory_budget
from advisor.run.bench import BenchConfig, BenchError, plan
from advisor_cli import cli
from scenarios.catalog import list_scenarios
from scenarios.overrides import Overrides

PROBE = ["--rate", "1e6", "--duration", "1e7", "--max-requests", "1000000", "--length-scale", "100",
         "--max-input-tokens", "1000000", "--max-output-tokens", "1000"]


def test_the_probe_command_is_refused_in_one_line_at_once_without_drawing_a_schedule(tmp_path, monkeypatch):
    def never(*a, **k):
        raise AssertionError("the schedule was drawn before the budget was checked")

    monkeypatch.setattr(bench, "build_schedule", never)
    tracemalloc.start()
    t = time.perf_counter()
    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", "--engine", "fake", *PROBE,
                                   "--out", str(tmp_path / "runs")])
    took_s = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    msg = str(res.exception)  # `advisor`'s main prints a BenchError as one "error: ..." line, exit 1
    assert isinstance(res.exception, BenchError) and "\n" not in msg, res.output
    assert msg.startswith("this run would need about") and "1,000,000 requests x 1,000 output tokens" in msg \
        and "--memory-budget" in msg, msg
    assert took_s < 0.5 and peak < 20e6, (took_s, peak)
    assert not (tmp_path / "runs").exists()


def test_a_normal_run_is_not_refused_and_every_shipped_scenario_fits_in_a_gigabyte(tmp_path):
    assert plan(BenchConfig(scenario="chat", engine="fake", out_dir=tmp_path)).schedule.requests
    for sc in list_scenarios():
        for full in (False, True):
            assert memory_budget.estimate(sc, Overrides(full_scale=full)).total_bytes < 1e9, (sc.name, full)


def test_the_budget_is_a_flag_and_the_default_is_half_the_memory(tmp_path, monkeypatch):
    cfg = BenchConfig(scenario="chat", engine="fake", out_dir=tmp_path, memory_budget_gb=0.001,
                      overrides=Overrides(full_scale=True))
    with pytest.raises(BenchError, match=r"over its budget of 0.0 GB \(--memory-budget 0.001\)"):
        plan(cfg)
    monkeypatch.setattr(memory_budget, "default_budget_bytes", lambda: 1e6)
    with pytest.raises(memory_budget.MemoryBudgetError):
        memory_budget.check(list_scenarios()[0], Overrides(full_scale=True))
    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", "--engine", "fake", "--memory-budget", "-1",
                                   "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--memory-budget must be a finite number of GB > 0, got -1.0" in res.output
