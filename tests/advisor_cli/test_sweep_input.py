"""`advisor sweep`: bad input is one usage line naming sweep's own flags, before an engine or server starts."""

from __future__ import annotations

import shlex

import pytest
from click.testing import CliRunner

from advisor_cli import cli


def _sweep(tmp_path, *args: str) -> object:
    return CliRunner().invoke(cli, ["sweep", *args, "--out", str(tmp_path / "runs")])


def _nothing_written(tmp_path) -> bool:
    return not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())


def test_every_step_is_checked_before_the_server_is_launched(tmp_path):
    marker = tmp_path / "started"
    launch = f"sh -c {shlex.quote(f'touch {marker}; exit 1')}"
    res = _sweep(tmp_path, "--scenario", "copilot", "--engine", "openai", "--launch", launch,
                 "--url", "http://127.0.0.1:1", "--rates", "1,2e6")
    assert res.exit_code == 2, res.output
    assert "--rates must each be at most 1e+06 req/s, got 2e+06" in res.output
    assert not marker.exists() and _nothing_written(tmp_path)


@pytest.mark.parametrize(("args", "words", "not_said"), [
    (["--scenario", "copilot", "--rates", "1,2e6"], "--rates must each be at most 1e+06 req/s", "--rate "),
    (["--scenario", "copilot", "--start", "1e5", "--factor", "4"],
     "--start 100000 x --factor 4 reaches 1.6e+06 req/s at step 3 of --max-steps 6", "--rate "),
    (["--scenario", "chat-closed", "--rates", "1,2"],
     "--rates does not apply to the closed-loop scenario 'chat-closed': sweep its users with --concurrencies",
     "--concurrency "),
    (["--scenario", "chat-closed"], "a rate sweep (--start/--factor) does not apply", "--concurrency "),
    (["--scenario", "copilot", "--concurrencies", "1,2"],
     "--concurrencies applies only to closed-loop scenarios; 'copilot' is open-loop: sweep its rate with --rates",
     "--rate "),
])
def test_a_step_the_scenario_cannot_run_is_a_usage_error_in_sweeps_words(tmp_path, args, words, not_said):
    res = _sweep(tmp_path, "--engine", "fake", *args)
    assert res.exit_code == 2 and words in res.output, res.output
    assert not_said not in res.output and "--rate instead" not in res.output
    assert _nothing_written(tmp_path)


def test_resume_refuses_every_flag_it_would_ignore(tmp_path):
    res = _sweep(tmp_path, "--resume", "20261122-101500-sweep-x", "--engine", "vllm", "--duration", "-5",
                 "--opt", "bogus=1", "--model", "nope")
    assert res.exit_code == 2, res.output
    assert ("--resume takes every setting from the saved sweep; drop --duration, --engine, --model, --opt"
            in res.output)
    # where the sweep is saved, its Ray cluster and the output format are still the caller's
    res = _sweep(tmp_path, "--resume", "20261122-101500-sweep-x", "--json")
    assert res.exit_code == 2 and "no sweep at 20261122-101500-sweep-x" in res.output, res.output


@pytest.mark.parametrize(("args", "words"), [
    (["--rates", "1,2", "--start", "5"], "drop --start"),
    (["--rates", "1,2", "--factor", "3", "--max-steps", "2"], "drop --factor, --max-steps"),
    (["--rates", ""], "--rates expects comma-separated numbers, e.g. 0.5,1,2,4; got ''"),
    (["--rates", " , "], "--rates expects comma-separated numbers"),
    (["--scenario", "chat-closed", "--concurrencies", "1,2", "--start", "2"], "without --concurrencies"),
])
def test_a_flag_the_sweep_would_ignore_is_refused(tmp_path, args, words):
    scenario = [] if "--scenario" in args else ["--scenario", "copilot"]
    res = _sweep(tmp_path, "--engine", "fake", *scenario, *args)
    assert res.exit_code == 2 and words in res.output, res.output
    assert _nothing_written(tmp_path)
