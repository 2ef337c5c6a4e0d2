"""Runs are driven on uvloop where it is installed, on asyncio's own loop when asked, and say which."""

from __future__ import annotations

import pytest

from advisor.loadgen import eventloop
from advisor.run.bench import BenchConfig, bench_once


@pytest.mark.parametrize("choice", ["asyncio", "uvloop"])
def test_a_run_on_either_loop_is_complete_and_names_its_loop(tmp_path, monkeypatch, choice):
    if choice == "uvloop":
        pytest.importorskip("uvloop")
    monkeypatch.setenv(eventloop.ENV, choice)
    cfg = BenchConfig(scenario="chat", engine="fake", engine_options={"ttft_ms": 2, "tpot_ms": 1},
                      overrides=_overrides(), out_dir=tmp_path)
    run = bench_once(cfg)
    assert run.loadgen.event_loop.startswith(choice)
    assert run.summary.n_ok == run.summary.n_requests > 0
    [driver] = run.loadgen.workers
    assert driver["worker"] == 0 and driver["cpu_s"] > 0 and driver["lag_p50_ms"] is not None


def test_an_unknown_loop_choice_is_an_error_naming_the_choices(monkeypatch):
    monkeypatch.setenv(eventloop.ENV, "trio")
    with pytest.raises(ValueError, match="must be auto, uvloop or asyncio"):
        eventloop.name()


def _overrides():
    from scenarios.overrides import Overrides

    return Overrides(rate_rps=20.0, duration_s=1.0, warmup_s=0.2)
