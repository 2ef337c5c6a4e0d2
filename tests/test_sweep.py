"""Sweep control: rising rates stop early past saturation; sweep.json round-trips; a real tiny sweep."""

from __future__ import annotations

import pytest

from advisor.capacity import capacity_from_sweep
from advisor.sweep import SweepConfig, SweepError, SweepResult, load_sweep, sweep_steps
from tests.recommend.runs import make_run


def fake_system(capacity_rps: float):
    """Runs of a system that meets SLOs up to `capacity_rps` and saturates at twice that."""
    calls = []

    def step(rate: float):
        calls.append(rate)
        if rate <= capacity_rps:
            return make_run(f"r{rate}", rps=rate)
        achieved = min(rate, 2 * capacity_rps)
        return make_run(f"r{rate}", rps=achieved, ttft_ms=5000, status="SATURATED" if rate > 2 * capacity_rps else "VALID")
    return step, calls


def test_sweep_stops_early_and_finds_capacity():
    step, calls = fake_system(capacity_rps=2.0)
    points, why = sweep_steps([0.5, 1, 2, 4, 8, 16, 32], step)
    assert calls == [0.5, 1, 2, 4, 8]  # 4 misses the SLO, 8 is saturated: 16 and 32 never run
    assert "saturat" in why
    assert capacity_from_sweep(points).capacity_rps == 2


def test_rate_plan_and_bad_config():
    assert SweepConfig("copilot", start_rps=0.5, factor=2, max_steps=4).rate_plan() == [0.5, 1, 2, 4]
    assert SweepConfig("copilot", rates=(4, 1, 2)).rate_plan() == [1, 2, 4]
    with pytest.raises(SweepError, match="--rates"):
        SweepConfig("copilot", rates=(1, -2))
    with pytest.raises(SweepError, match="--factor > 1"):
        SweepConfig("copilot", factor=1.0)


def test_sweep_json_round_trip(tmp_path):
    step, _ = fake_system(capacity_rps=1.0)
    points, why = sweep_steps([1, 2, 4], step)
    res = SweepResult("sw1", "copilot", "own", None, "2026-11-21T00:00:00Z", tuple(points), capacity_from_sweep(points), why)
    res.save(tmp_path)
    back = load_sweep("sw1", root=tmp_path)
    assert back.capacity.capacity_rps == 1 and back.stop_reason == why
    assert [p.run_id for p in back.points] == [p.run_id for p in points]
    with pytest.raises(SweepError, match="advisor sweep"):
        load_sweep("nope", root=tmp_path)


@pytest.mark.slow
def test_real_sweep_with_fake_engine(tmp_path):
    from advisor.sweep import run_sweep
    from scenarios.overrides import Overrides

    cfg = SweepConfig("copilot", engine="fake", rates=(1.0, 2.0), out_dir=tmp_path,
                      overrides=Overrides(duration_s=2.0, warmup_s=0.5, max_output_tokens=8, max_input_tokens=64),
                      engine_options={"ttft_ms": 5, "tpot_ms": 1})
    res = run_sweep(cfg)
    assert len(res.points) >= 1 and (tmp_path / res.sweep_id / "sweep.json").is_file()
    assert load_sweep(res.path).sweep_id == res.sweep_id
