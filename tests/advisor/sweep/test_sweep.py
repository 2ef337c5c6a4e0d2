"""Sweep control: rising loads stop early past saturation; sweep.json round-trips; one engine for every step."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.run.bench import BenchConfig
from advisor.saved.store import RunResult
from advisor.sweep.capacity import capacity_from_sweep
from advisor.sweep.run import SweepConfig, SweepError, load_sweep, new_sweep_id, run_sweep
from scenarios.overrides import Overrides
from tests.advisor.recommend.runs import make_run


def fake_system(capacity_rps: float):
    """Saved runs of a system that meets SLOs up to `capacity_rps` and saturates past twice that."""
    calls = []

    def measure(step: BenchConfig) -> RunResult:
        rate = step.overrides.rate_rps
        calls.append(rate)
        if rate <= capacity_rps:
            d = make_run(f"r{rate}", rps=rate)
        else:
            achieved = min(rate, 2 * capacity_rps)
            d = make_run(f"r{rate}", rps=achieved, ttft_ms=5000,
                         status="SATURATED" if rate > 2 * capacity_rps else "VALID")
        return RunResult.from_dict(d)
    return measure, calls


def _cfg(tmp_path, **kw) -> SweepConfig:
    return SweepConfig(BenchConfig("copilot", engine="fake", out_dir=tmp_path), **kw)


def test_sweep_stops_early_and_finds_capacity(tmp_path):
    measure, calls = fake_system(capacity_rps=2.0)
    res = run_sweep(_cfg(tmp_path, rates=(0.5, 1, 2, 4, 8, 16, 32)), None, measure=measure)
    assert calls == [0.5, 1, 2, 4, 8]  # 4 misses the SLO, 8 is saturated: 16 and 32 never run
    assert "saturat" in res.stop_reason and res.state == "done"
    assert capacity_from_sweep(res.points).capacity_rps == 2


def test_load_plan_and_bad_config(tmp_path):
    assert _cfg(tmp_path, start_rps=0.5, factor=2, max_steps=4).load_plan() == [0.5, 1, 2, 4]
    assert _cfg(tmp_path, rates=(4, 1, 2)).load_plan() == [1, 2, 4]
    assert _cfg(tmp_path, concurrencies=(8, 1, 2)).load_plan() == [1, 2, 8]
    with pytest.raises(SweepError, match="--rates"):
        _cfg(tmp_path, rates=(1, -2))
    with pytest.raises(SweepError, match="--factor must be a finite number > 1"):
        _cfg(tmp_path, factor=1.0)
    with pytest.raises(SweepError, match="not both"):
        _cfg(tmp_path, rates=(1,), concurrencies=(1,))
    with pytest.raises(SweepError, match="--concurrencies"):
        _cfg(tmp_path, concurrencies=(0, 2))


def test_sweep_json_round_trip(tmp_path):
    measure, _ = fake_system(capacity_rps=1.0)
    res = run_sweep(_cfg(tmp_path, rates=(1, 2, 4)), None, measure=measure)
    back = load_sweep(res.sweep_id, root=tmp_path)
    assert back.capacity.capacity_rps == 1 and back.stop_reason == res.stop_reason
    assert [p.run_id for p in back.points] == [p.run_id for p in res.points]
    assert back.config["rates"] == [1, 2, 4]
    with pytest.raises(SweepError, match="advisor sweep"):
        load_sweep("nope", root=tmp_path)


def test_sweep_ids_are_unique_and_never_a_path(tmp_path):
    ids = {new_sweep_id("copilot", "openai", "rps") for _ in range(50)}
    assert len(ids) == 50
    scenario_file = tmp_path / "my dir" / "copilot-copy.yaml"
    scenario_file.parent.mkdir()
    from scenarios.catalog import SCENARIO_DIR

    scenario_file.write_text((SCENARIO_DIR / "copilot.yaml").read_text())
    measure, _ = fake_system(capacity_rps=8.0)
    cfg = SweepConfig(BenchConfig(str(scenario_file), engine="fake", out_dir=tmp_path / "runs"), rates=(1,))
    res = run_sweep(cfg, None, measure=measure)
    assert "/" not in res.sweep_id and "my dir" not in res.sweep_id and "copilot" in res.sweep_id
    assert res.path == tmp_path / "runs" / res.sweep_id


@pytest.mark.slow
def test_real_sweep_with_fake_engine(tmp_path):
    from advisor.run.bench import open_engine

    bench = BenchConfig("copilot", engine="fake", out_dir=tmp_path, engine_options={"ttft_ms": 5, "tpot_ms": 1},
                        overrides=Overrides(duration_s=2.0, warmup_s=0.5, max_output_tokens=8, max_input_tokens=64))
    cfg = SweepConfig(bench, rates=(1.0, 2.0))
    with open_engine(bench) as adapter:
        res = run_sweep(cfg, adapter)
    assert len(res.points) >= 1 and (tmp_path / res.sweep_id / "sweep.json").is_file()
    assert load_sweep(res.path).sweep_id == res.sweep_id


def test_users_sweep_reports_capacity_in_users(tmp_path):
    def measure(step: BenchConfig) -> RunResult:
        users = step.overrides.concurrency
        return RunResult.from_dict(make_run(f"u{users}", rps=users * 0.5, ttft_ms=200 if users <= 4 else 2000))

    res = run_sweep(replace(_cfg(tmp_path, concurrencies=(1, 2, 4, 8)), bench=BenchConfig(
        "chat-closed", engine="fake", out_dir=tmp_path)), None, measure=measure)
    assert res.unit == "users" and res.capacity.capacity_users == 4
    assert "4 users" in res.capacity.reason and "8 users" in res.capacity.reason
