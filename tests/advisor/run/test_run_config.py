"""Run settings typed once: BenchConfig and SweepConfig declare each setting's type, range, help and flag; a bad
value is one line naming the flag, the shared flags are made from the fields, and sweep.json round-trips."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from pydantic import Field
from pydantic.dataclasses import dataclass

from advisor.run.config import BenchConfig, BenchError, SweepConfig, SweepError, extra_of
from advisor_cli import cli
from advisor_cli.options import run_flags_of
from scenarios.overrides import Overrides

REPO = Path(__file__).resolve().parents[3]
SAVED_SWEEPS = sorted((REPO / "tests" / "data").rglob("sweep.json"))
BENCH = BenchConfig("chat", engine="fake")

# (config, field, a bad value, the line it must give): one per field that declares a flag
BAD = [
    (BenchConfig, "scenario", 3, "--scenario: input should be a valid string, got 3"),
    (BenchConfig, "engine", None, "--engine: input should be a valid string, got None"),
    (BenchConfig, "model", 1.5, "--model: input should be a valid string, got 1.5"),
    (BenchConfig, "out_dir", 7, "--out: input is not a valid path for <class 'pathlib.Path'>, got 7"),
    (BenchConfig, "timeout_s", 0.0, "--timeout must be a finite number of seconds > 0, got 0.0"),
    (BenchConfig, "timeout_s", float("nan"), "--timeout must be a finite number of seconds > 0, got nan"),
    (BenchConfig, "timeout_s", True, "--timeout must be a finite number of seconds > 0, got True"),
    (BenchConfig, "workers", "bogus", "--workers must be 'auto', an integer >= 1 or ray:N (N Ray actors), got 'bogus'"),
    (BenchConfig, "ray_address", "auto", "--ray auto: the Ray cluster is for --workers ray:N; add it or drop --ray"),
    (BenchConfig, "max_request_tokens", 0, "--max-request-tokens must be a whole number from 1 to 16,777,216 (the "
                                           "most advisor holds in memory for one request), got 0"),
    (BenchConfig, "max_request_tokens", 2.0, "--max-request-tokens must be a whole number from 1 to 16,777,216 (the "
                                             "most advisor holds in memory for one request), got 2.0"),
    (BenchConfig, "memory_budget_gb", -1.0, "--memory-budget must be a finite number of GB > 0, got -1.0"),
    (SweepConfig, "rates", (0.0,), "--rates must be positive numbers, e.g. 0.5,1,2,4; got (0.0,)"),
    (SweepConfig, "rates", (), "--rates must be positive numbers, e.g. 0.5,1,2,4; got ()"),
    (SweepConfig, "concurrencies", (2, 1.5), "--concurrencies must be whole numbers >= 1, e.g. 1,2,4,8; got (2, 1.5)"),
    (SweepConfig, "start_rps", 0.0, "--start must be a finite number > 0, got 0.0"),
    (SweepConfig, "factor", 1.0, "--factor must be a finite number > 1, got 1.0"),
    (SweepConfig, "max_steps", 51, "--max-steps must be a whole number from 1 to 50, got 51"),
    (SweepConfig, "repeats", 0, "--repeats must be a whole number from 1 to 100, got 0"),
    (SweepConfig, "restart_engine", 1, "--restart-engine must be true or false, got 1"),
]


def _make(config: type, **kw: object) -> object:
    return BenchConfig(**{"scenario": "chat", **kw}) if config is BenchConfig else SweepConfig(BENCH, **kw)


@pytest.mark.parametrize(("config", "name", "value", "line"), BAD, ids=[f"{b[1]}={b[2]!r}" for b in BAD])
def test_a_bad_value_is_one_line_that_names_the_flag(config, name, value, line):
    error = BenchError if config is BenchConfig else SweepError
    with pytest.raises(error) as e:
        _make(config, **{name: value})
    assert str(e.value) == line and "\n" not in line


def test_every_flag_a_config_declares_has_a_bad_value_above():
    declared = {(c, n) for c in (BenchConfig, SweepConfig) for n, i in c.__pydantic_fields__.items()
                if "flag" in extra_of(i)}
    assert declared == {(c, n) for c, n, _, _ in BAD}


def test_a_copy_is_checked_like_a_new_config():
    with pytest.raises(BenchError, match="--timeout must be"):
        dataclasses.replace(BENCH, timeout_s=-1.0)
    with pytest.raises(SweepError, match="give --rates or --concurrencies, not both"):
        dataclasses.replace(SweepConfig(BENCH, rates=(1.0,)), concurrencies=(1,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        BENCH.timeout_s = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(("argv", "line"), [
    (["bench", "--timeout", "0"], "Error: --timeout must be a finite number of seconds > 0, got 0.0"),
    (["bench", "--memory-budget", "-1"], "Error: --memory-budget must be a finite number of GB > 0, got -1.0"),
    (["bench", "--max-request-tokens", "0"], "Error: --max-request-tokens must be a whole number from 1 to"),
    (["sweep", "--rates", "1", "--workers", "bogus"], "Error: --workers must be 'auto'"),
    (["sweep", "--start", "0"], "Error: --start must be a finite number > 0, got 0.0"),
    (["sweep", "--factor", "1"], "Error: --factor must be a finite number > 1, got 1.0"),
    (["sweep", "--max-steps", "0"], "Error: --max-steps must be a whole number from 1 to 50, got 0"),
    (["sweep", "--rates", "0"], "Error: --rates must be positive numbers, e.g. 0.5,1,2,4; got (0.0,)"),
    (["sweep", "--rates", "1", "--concurrencies", "1"], "Error: give --rates or --concurrencies, not both"),
])
def test_the_command_line_refuses_it_before_anything_runs(argv, line, tmp_path):
    res = CliRunner().invoke(cli, [*argv, "--scenario", "chat", "--engine", "fake", "--out", str(tmp_path / "runs")])
    assert res.exit_code == 2, res.output
    assert line in res.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_each_flag_field_is_in_help_with_its_description(command):
    text = " ".join(CliRunner().invoke(cli, [command, "--help"], terminal_width=200).output.split())
    for config in (BenchConfig, SweepConfig):
        for name, info in config.__pydantic_fields__.items():
            flag = extra_of(info).get("flag")
            if flag and (command == "sweep" or config is BenchConfig or name in ("repeats", "restart_engine")):
                assert flag in text, flag
                if info.description:
                    assert " ".join(info.description.split())[:30] in text, flag


@dataclass(frozen=True)
class Wider(BenchConfig):
    probe_every_s: float = Field(2.5, gt=0, description="Seconds between two probes of the engine.",
                                 json_schema_extra={"flag": "--probe-every"})


def test_a_new_field_with_a_flag_is_a_new_flag_with_its_type_default_and_help():
    seen = {}

    @click.command()
    @run_flags_of(Wider)
    def command(**flags: object) -> None:
        seen.update(flags)

    runner = CliRunner()
    text = " ".join(runner.invoke(command, ["--help"], terminal_width=200).output.split())
    assert "--probe-every FLOAT" in text and "Seconds between two probes of the engine. [default: 2.5]" in text
    assert text.index("--json") < text.index("--max-request-tokens") < text.index("--probe-every")
    assert runner.invoke(command, ["--probe-every", "4"]).exit_code == 0 and seen["probe_every_s"] == 4.0


@pytest.mark.parametrize("path", SAVED_SWEEPS, ids=[p.parent.name for p in SAVED_SWEEPS])
def test_a_saved_sweep_loads_and_writes_back_the_same_bytes(path):
    saved = json.loads(path.read_text())["config"]
    cfg = SweepConfig.from_dict(saved, Path(saved["out_dir"]))
    assert json.dumps(cfg.to_dict()) == json.dumps(saved)


def test_a_resumed_sweep_keeps_every_setting_its_flags_set(tmp_path):
    bench = BenchConfig("chat-closed", engine="openai", model="m", engine_options={"url": "http://127.0.0.1:9"},
                        overrides=Overrides(duration_s=5.0, seed=3, full_scale=True), out_dir=tmp_path,
                        timeout_s=30.0, workers=2, max_request_tokens=4096, memory_budget_gb=1.5,
                        server_hardware={"id": "h100-sxm", "count": 2})
    cfg = SweepConfig(bench, concurrencies=(1, 4), repeats=3, restart_engine=True)
    text = json.dumps(cfg.to_dict())
    back = SweepConfig.from_dict(json.loads(text), tmp_path)
    assert back == cfg and json.dumps(back.to_dict()) == text


def test_an_old_file_without_the_newer_keys_takes_the_defaults(tmp_path):
    old = {"scenario": "chat", "engine": "own", "rates": [1, 2]}
    cfg = SweepConfig.from_dict(old, tmp_path)
    assert cfg.rates == (1.0, 2.0) and cfg.bench.max_request_tokens == BENCH.max_request_tokens
    assert cfg.bench.out_dir == tmp_path and cfg.repeats == 1


@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_each_scenario_override_flag_is_made_from_its_overrides_field(command):
    from scenarios.overrides import FLAGS

    params = {p.name: p for p in cli.commands[command].params}
    skipped = {"rate_rps", "concurrency"} if command == "sweep" else set()  # sweep sets the load itself
    for f in dataclasses.fields(Overrides):
        if f.name in skipped:
            assert f.name not in params
            continue
        p = params[f.name]
        assert p.help == f.metadata["help"] and p.opts == [FLAGS.get(f.name, "--full-scale")]
        assert p.type.name == {"float | None": "float", "int | None": "integer", "bool": "boolean"}[str(f.type)]
