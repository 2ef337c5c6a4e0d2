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


def test_a_file_that_is_not_a_run_is_named_as_such(tmp_path):
    # was: "no run or sweep at /x/notes.txt (looked for /x/result.json and sweep.json)": a folder it was not given
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    res = CliRunner().invoke(cli, ["show", str(notes), "--runs", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert f"{notes} is a file, not a saved run or sweep" in res.output and "looked for" not in res.output
