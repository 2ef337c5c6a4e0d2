"""Ctrl-C in a sweep's step: the console names the saved sweep and how to resume it, not only the partial run."""

from __future__ import annotations

import signal

import pytest

from advisor.run.bench import BenchConfig, RunInterrupted
from advisor.saved.store import RunResult
from advisor.sweep.run import SweepConfig, SweepInterrupted, load_sweep, run_sweep
from advisor_cli import _interrupted
from tests.advisor.recommend.runs import make_run


def measure_until_signal(step: BenchConfig) -> RunResult:
    """A sweep step's stand-in: steps from 2 req/s on are interrupted by SIGINT."""
    rate = step.overrides.rate_rps
    run = RunResult.from_dict(make_run(f"r{rate:g}", rps=rate))
    if rate >= 2:
        raise RunInterrupted(signal.SIGINT, run)
    return run


def test_the_console_names_the_sweep_its_kept_steps_and_the_resume_command(tmp_path, capsys):
    cfg = SweepConfig(BenchConfig("copilot", engine="fake", out_dir=tmp_path), rates=(1, 2, 4))
    with pytest.raises(RunInterrupted) as caught:  # still a RunInterrupted: exit code and partial run as before
        run_sweep(cfg, None, measure=measure_until_signal)
    with pytest.raises(SystemExit) as ended:
        _interrupted(caught.value)
    assert ended.value.code == 130
    err = capsys.readouterr().err
    [folder] = [p for p in tmp_path.iterdir() if (p / "sweep.json").exists()]
    assert "interrupted by SIGINT" in err
    assert f"sweep saved: {folder}" in err and "1 finished step kept" in err
    # --resume looks under --out: a sweep saved elsewhere than runs/ names its folder in the command
    assert f"resume with `advisor sweep --resume {folder.name} --out {tmp_path}`" in err
    assert f"resume with `advisor sweep --resume {folder.name} --out {tmp_path}`" in load_sweep(folder).capacity.reason


def test_in_the_default_runs_folder_the_resume_command_needs_no_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = SweepConfig(BenchConfig("copilot", engine="fake"), rates=(1, 2, 4))
    with pytest.raises(SweepInterrupted) as caught:
        run_sweep(cfg, None, measure=measure_until_signal)
    sweep_id = caught.value.sweep.sweep_id
    assert caught.value.resume_text().endswith(f"resume with `advisor sweep --resume {sweep_id}`")
    reason = load_sweep(sweep_id).capacity.reason
    assert reason.endswith(f"interrupted at 2 req/s (that step is not counted): resume with "
                           f"`advisor sweep --resume {sweep_id}`")
