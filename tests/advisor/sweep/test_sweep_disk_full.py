"""A disk that fills mid-sweep: sweep.json says the sweep stopped (error), and the error names `--resume` (issue 40)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from advisor.run.bench import BenchConfig
from advisor.run.config import SweepError
from advisor.saved.store import RunNotSaved, RunResult
from advisor.sweep import run as sweep_mod
from advisor.sweep.run import SweepConfig, load_sweep, resume_config, run_sweep
from tests.advisor.recommend.runs import make_run

FULL = OSError(errno.ENOSPC, "No space left on device")


def _measure(step: BenchConfig) -> RunResult:
    rate = step.overrides.rate_rps
    return RunResult.from_dict(make_run(f"r{rate}", rps=rate))


def _saved(tmp_path: Path) -> dict:
    [f] = tmp_path.glob("*/sweep.json")
    return json.loads(f.read_text())


def test_a_step_that_cannot_be_saved_stops_the_sweep_as_error_and_names_resume(tmp_path):
    def measure(step: BenchConfig) -> RunResult:
        run = _measure(step)
        if step.overrides.rate_rps >= 2:
            raise RunNotSaved(run, tmp_path / "x", ("result.json",), FULL)
        return run

    cfg = SweepConfig(BenchConfig("copilot", engine="fake", out_dir=tmp_path), rates=(1, 2, 4))
    with pytest.raises(SweepError) as e:
        run_sweep(cfg, None, measure=measure)
    doc = _saved(tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and "stopped at 2 req/s: the run could not be saved: No space left on device" in msg
    assert f"resume with `advisor sweep --resume {doc['sweep_id']} --out {tmp_path}`" in msg
    assert doc["state"] == "error" and len(doc["steps"]) == 1 and doc["stop_reason"].startswith("stopped by an error")
    assert resume_config(load_sweep(doc["sweep_id"], tmp_path), tmp_path).rates == (1, 2, 4)  # it can go on


def test_a_sweep_json_that_cannot_be_written_stops_the_sweep_and_names_resume(tmp_path, monkeypatch):
    real, calls = sweep_mod.write_atomic, []

    def full_once(path, data):  # the save after step 1 hits a full disk; then space is freed
        calls.append(path)
        if len(calls) == 2:
            raise FULL
        real(path, data)

    monkeypatch.setattr(sweep_mod, "write_atomic", full_once)
    cfg = SweepConfig(BenchConfig("copilot", engine="fake", out_dir=tmp_path), rates=(1, 2, 4))
    with pytest.raises(SweepError, match=r"sweep.json could not be saved: No space left on device.*"
                                         r"resume with `advisor sweep --resume") as e:
        run_sweep(cfg, None, measure=_measure)
    assert _saved(tmp_path)["state"] == "error" and "says so" in str(e.value)

    later: list[Path] = []

    def full_after_step_1(path, data):  # the start and step 1 are saved; then the disk stays full
        later.append(path)
        if len(later) > 2:
            raise FULL
        real(path, data)

    monkeypatch.setattr(sweep_mod, "write_atomic", full_after_step_1)
    with pytest.raises(SweepError, match=r"stopped at 2 req/s: sweep.json could not be saved.*sweep.json could not "
                                         r"be updated \(No space left on device\); free space under --out, then "
                                         r"resume with `advisor sweep --resume"):
        run_sweep(cfg, None, measure=_measure)
