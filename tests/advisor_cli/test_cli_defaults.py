"""The command line's defaults are the config types' own: one declaration, and `--workers` is parsed once."""

from __future__ import annotations

import click
import pytest

from advisor.run import bench
from advisor.run.bench import BenchConfig
from advisor.run.config import MAX_REPEATS, SweepConfig, default
from advisor_cli import cli
from advisor_cli.options import bench_config

# flag's parameter name -> the config field it fills
BENCH_FIELDS = {"engine": "engine", "out_dir": "out_dir", "timeout_s": "timeout_s", "workers": "workers"}
SWEEP_FIELDS = {"start_rps": "start_rps", "factor": "factor", "max_steps": "max_steps", "repeats": "repeats"}


def _declared(config: type, name: str) -> object:
    return default(config, name)


def _params(command: str) -> dict[str, click.Parameter]:
    return {p.name: p for p in cli.commands[command].params}


@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_the_shared_flags_default_to_benchconfigs_values(command):
    params = _params(command)
    for param, field in BENCH_FIELDS.items():
        assert params[param].default == _declared(BenchConfig, field), param
    assert params["repeats"].default == _declared(SweepConfig, "repeats")
    assert params["repeats"].type.max == MAX_REPEATS
    help_text = params["max_request_tokens"].help
    assert f"default {_declared(BenchConfig, 'max_request_tokens'):,}" in help_text


def test_the_sweep_flags_default_to_sweepconfigs_values():
    params = _params("sweep")
    for param, field in SWEEP_FIELDS.items():
        assert params[param].default == _declared(SweepConfig, field), param


@pytest.mark.parametrize("command", ["matrix", "show", "report", "compare", "dashboard", "recommend"])
def test_every_runs_folder_flag_defaults_to_the_bench_out_dir(command):
    params = _params(command)
    name = "out_dir" if command == "matrix" else "root"
    assert params[name].default == _declared(BenchConfig, "out_dir")


def _flags(**over: object) -> dict:
    return {"scenario": "chat", "engine": "openai", "model": None, "opts": (), "threads": None, "device": None,
            "url": "http://127.0.0.1:9", "launch": None, "out_dir": "runs", "timeout_s": 10.0, **over}


def test_workers_is_parsed_once(monkeypatch):
    calls = []
    parse = bench.worker_spec.parse

    def counted(value):
        calls.append(value)
        return parse(value)

    monkeypatch.setattr(bench.worker_spec, "parse", counted)
    monkeypatch.setattr("adapters.placement.available_cpus", lambda: tuple(range(8)))  # 3 workers are allowed
    assert bench_config(**_flags(workers="3")).workers == 3
    assert calls == ["3"]  # BenchConfig's check is the one parse
    assert bench_config(**_flags()).workers == _declared(BenchConfig, "workers")  # not given: the type's default


def test_a_bad_workers_value_is_still_a_usage_error_naming_the_flag():
    with pytest.raises(click.UsageError, match=r"--workers must be 'auto', an integer >= 1 or ray:N"):
        bench_config(**_flags(workers="0"))
