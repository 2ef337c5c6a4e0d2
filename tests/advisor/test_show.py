"""`advisor show`: a run, a sweep (its steps, capacity and how it stopped), or one line for what is not there."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from advisor.bench import BenchConfig, RunInterrupted
from advisor.sweep import SweepConfig, run_sweep
from advisor_cli import cli
from tests.advisor.test_sweep_interrupted import measure_until_signal


def _interrupted_sweep(root) -> str:
    with pytest.raises(RunInterrupted):
        run_sweep(SweepConfig(BenchConfig("copilot", engine="fake", out_dir=root), rates=(1, 2)), None,
                  measure=measure_until_signal)
    [folder] = [p for p in root.iterdir() if (p / "sweep.json").exists()]
    return folder.name


def test_a_sweep_id_shows_its_steps_and_how_it_stopped(tmp_path):
    # `advisor show SWEEP_ID` said "no run at ..." though the folder was there
    sweep_id = _interrupted_sweep(tmp_path)
    res = CliRunner().invoke(cli, ["show", sweep_id, "--runs", str(tmp_path)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == f"sweep {sweep_id} (interrupted): copilot on fake"
    assert lines[1].startswith("1 req/s: pass") and "run r1" in lines[1]
    assert lines[2] == "interrupted by SIGINT at 2 req/s (not counted; its partial run: r2)"
    assert lines[3].startswith("capacity: 1 req/s - ") and f"--resume {sweep_id}" in lines[3]


def test_nothing_there_is_one_usage_line(tmp_path):
    res = CliRunner().invoke(cli, ["show", "nope", "--runs", str(tmp_path)])
    assert res.exit_code == 2
    assert "no run or sweep at nope" in res.output and "Traceback" not in res.output
