"""`advisor show`: a run, a sweep (its steps, capacity and how it stopped), or one line for what is not there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.run.bench import BenchConfig, RunInterrupted
from advisor.sweep.run import SweepConfig, run_sweep, sweep_lock
from advisor_cli import cli
from tests.advisor.sweep.test_sweep_interrupted import measure_until_signal


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


H200 = Path(__file__).resolve().parents[1] / "data" / "gpu_h200_2026_11_26"


def _running_sweep(root: Path) -> Path:
    """The H200 sweep as if its process had been killed mid-way: saved as running."""
    folder = root / "20261126-010554-sweep-chat-own-cafe94"
    shutil.copytree(H200 / folder.name, folder)
    doc = json.loads((folder / "sweep.json").read_text())
    doc.update(state="running", stop_reason="")
    (folder / "sweep.json").write_text(json.dumps(doc))
    return folder


def test_a_sweep_nobody_runs_is_shown_as_abandoned_with_the_command_that_goes_on(tmp_path):
    # was: "(running) ... stopped: not yet" for a sweep abandoned two days before
    folder = _running_sweep(tmp_path)
    res = CliRunner().invoke(cli, ["show", folder.name, "--runs", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "(abandoned: saved as running, but no advisor runs it)" in res.output.splitlines()[0]
    last = res.output.splitlines()[-1]
    assert last.startswith("stopped: abandoned after 1 step(s)") and f"advisor sweep --resume {folder.name}" in last
    assert "not yet" not in res.output


def test_a_sweep_whose_process_holds_it_is_running(tmp_path):
    folder = _running_sweep(tmp_path)
    with sweep_lock(folder):
        res = CliRunner().invoke(cli, ["show", folder.name, "--runs", str(tmp_path)])
    assert "(running)" in res.output.splitlines()[0]
    assert res.output.splitlines()[-1] == "stopped: not yet (it is running)"


def test_a_shown_run_saves_nothing_and_says_why_a_valid_run_did_not_hold_its_rate():
    res = CliRunner().invoke(cli, ["show", str(H200 / "20261126-010437-chat-own-5881")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "saved:" not in text and "folder: " in text  # a view, not a save
    # VALID beside "rate NOT held": which part did not hold, and that the verdict judges something else
    assert "rate NOT held: 5.18 req/s completed of 5.55 offered (93%, under 95%)" in text
    assert "the engine, not the load generator, fell short" in text and "the verdict, VALID" in text
