"""Bad input is found before anything runs and named in one line; a zero that means something is honoured."""

from __future__ import annotations

import json
import pathlib
import time

import pytest
from click.testing import CliRunner

from advisor_cli import cli, main
from tests.servers.mock_openai import MockOpenAIServer

FAST = ["--engine", "fake", "--opt", "ttft_ms=2", "--opt", "tpot_ms=1", "--duration", "1", "--rate", "20",
        "--max-output-tokens", "4"]


def _bench(*args: str, tmp_path) -> object:
    return CliRunner().invoke(cli, ["bench", "--scenario", "chat", "--out", str(tmp_path / "runs"), *args])


def test_warmup_zero_means_no_warmup(tmp_path):
    res = _bench(*FAST, "--warmup", "0", "--json", tmp_path=tmp_path)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["schedule"]["warmup_s"] == 0 and doc["schedule"]["overrides"]["warmup_s"] == 0


@pytest.mark.parametrize(("flag", "value", "words"), [
    ("--rate", "0", "--rate must be a finite number > 0"), ("--duration", "0", "--duration must be"),
    ("--max-requests", "0", "--max-requests must be an integer >= 1"),
    ("--length-scale", "0", "--length-scale must be"), ("--rate", "nan", "--rate must be a finite"),
    ("--warmup", "-1", "--warmup must be a finite number >= 0"), ("--timeout", "nan", "--timeout must be a finite"),
    ("--timeout", "0", "--timeout must be a finite"), ("--warmup", "inf", "--warmup must be a finite")])
def test_a_zero_or_non_finite_that_means_nothing_is_an_error_naming_the_range(tmp_path, flag, value, words):
    pairs = [FAST[i:i + 2] for i in range(0, len(FAST), 2)]
    args = [a for pair in pairs if pair[0] != flag for a in pair]
    res = _bench(*args, flag, value, tmp_path=tmp_path)
    assert res.exit_code == 2 and words in res.output, res.output
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())


def test_unknown_or_bad_engine_options_name_the_valid_ones(tmp_path):
    res = _bench(*FAST, "--opt", "bogus=1", tmp_path=tmp_path)
    assert res.exit_code == 2 and "unknown option bogus for engine 'fake'; valid options:" in res.output
    assert "ttft_ms" in res.output
    res = _bench(*FAST, "--threads", "0", tmp_path=tmp_path)
    # a usage error (exit 2, as the README's exit codes say), found before anything starts (was: exit 1, in the plan)
    assert res.exit_code == 2 and "threads (--threads): Input should be greater than or equal to 1" in res.output
    res = _bench(*[a if a != "fake" else "no-such-engine" for a in FAST], tmp_path=tmp_path)
    assert res.exit_code == 2 and "unknown engine 'no-such-engine'; choose one of:" in res.output


def test_an_option_given_as_a_flag_is_named_as_the_flag_and_a_flag_and_opt_that_disagree_are_refused(tmp_path):
    res = _bench(*FAST, "--url", "http://127.0.0.1:1", tmp_path=tmp_path)
    assert res.exit_code == 2 and "unknown option url (--url) for engine 'fake'" in res.output
    res = _bench(*FAST, "--threads", "2", "--opt", "threads=3", tmp_path=tmp_path)
    assert res.exit_code == 2 and "--threads 2 and --opt threads=3 disagree" in res.output, res.output
    res = _bench(*FAST, "--threads", "2", "--opt", "threads=2", "--json", tmp_path=tmp_path)
    assert res.exit_code == 0, res.output  # the same value twice is no conflict


def test_a_scenario_path_that_is_a_folder_is_named_as_one(tmp_path):
    res = _bench("--scenario", str(tmp_path), "--engine", "fake", tmp_path=tmp_path)
    assert res.exit_code == 2 and f"scenario file {tmp_path} is a folder, not a file" in res.output


@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_an_unknown_scenario_is_a_usage_error_as_an_unknown_engine_is(tmp_path, command):
    # it exited 1 (a runtime error) where `--engine nope` exits 2; both are a mistyped name
    res = CliRunner().invoke(cli, [command, "--scenario", "nope", "--engine", "fake", "--out", str(tmp_path / "runs")])
    assert res.exit_code == 2, res.output
    error = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and "unknown scenario 'nope'; choose one of" in error[0] and "copilot" in error[0]
    assert not (tmp_path / "runs").exists()


def test_an_out_folder_that_cannot_be_made_is_found_before_the_run_even_for_root():
    """A permission check passes for root where nothing can be made (/proc): the check makes and removes a folder."""
    from advisor.run.bench import BenchError, check_out_dir

    if not pathlib.Path("/proc/self").is_dir():
        pytest.skip("needs /proc")
    with pytest.raises(BenchError, match="cannot save runs under --out /proc/advisor-runs"):
        check_out_dir(pathlib.Path("/proc/advisor-runs"))


def test_an_unwritable_out_folder_is_found_before_the_run(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    t0 = time.monotonic()
    monkeypatch.setattr("sys.argv", ["advisor", "bench", "--scenario", "copilot", "--out", str(blocker / "runs")])
    with pytest.raises(SystemExit) as exit_:
        main()  # the own engine would take seconds to start: the check comes first
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and "cannot save runs under --out" in err and len(err.strip().splitlines()) == 1
    assert time.monotonic() - t0 < 5


def test_a_scenario_with_an_infinite_duration_is_refused_when_loaded(tmp_path):
    bad = tmp_path / "inf.yaml"
    bad.write_text("name: inf\ndescription: an endless scenario that must be refused at once\n"
                   "workload: {input: {dist: fixed, value: 8}, output: {dist: fixed, value: 4}}\n"
                   "arrival: {process: constant, rate_rps: 1}\nduration_s: .inf\n")
    res = _bench("--scenario", str(bad), "--engine", "fake", tmp_path=tmp_path)
    assert res.exit_code == 2 and "duration_s" in res.output and "finite" in res.output


def test_a_text_only_server_without_a_tokenizer_stops_at_the_preflight(tmp_path, capsys, monkeypatch):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    with MockOpenAIServer(mode="reject_ids") as srv:
        monkeypatch.setattr("sys.argv", ["advisor", "bench", "--scenario", "chat", "--engine", "openai", "--url",
                                         srv.url, "--model", str(gguf), "--out", str(tmp_path / "runs")])
        with pytest.raises(SystemExit) as exit_:
            main()
        n_requests = len(srv.requests)
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and "could not serve a warm-up request" in err and "--opt tokenizer=" in err
    assert n_requests <= 4  # the preflight, not a whole run of refused requests
    assert not list((tmp_path / "runs").glob("*/result.json"))
