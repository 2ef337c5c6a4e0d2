"""Roofline numbers for a known model on H100 SXM by hand, calibration, backtest and estimates."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.base import EngineInfo
from advisor.catalog import load_catalog
from advisor.metrics.distribution import Distribution
from advisor.metrics.summary import RunSummary
from advisor.metrics.verdict import Verdict
from advisor.saved.store import RunResult
from advisor.sizing.roofline import (
    Efficiency,
    ModelShape,
    Workload,
    calibrate,
    decode_step_ideal_s,
    estimate,
    predict,
    prefill_ideal_s,
)
from scenarios.types import SLOs

LLAMA3_8B = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
             "head_dim": 128, "intermediate_size": 14336, "vocab_size": 128256}


def engine(dtype_bytes: int = 2, kv: str | None = None, extra: dict[str, Any] | None = None) -> EngineInfo:
    return EngineInfo("vllm", "vLLM", "1", "cpu", "llama3-8b", "hf", "bf16", kv_cache_dtype=kv,
                      extra={"n_params": 8.03e9, "model_config": LLAMA3_8B, "dtype_bytes": dtype_bytes}
                      if extra is None else extra)


@pytest.fixture(scope="module")
def h100():
    return load_catalog().get("h100-sxm")


def test_llama3_8b_shape():
    s = ModelShape.from_engine(engine())
    assert s is not None
    assert s.weight_bytes == pytest.approx(16.06e9)
    assert s.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2 == 131072  # K and V, 32 layers, 8 KV heads, bf16
    assert ModelShape.from_engine(engine(kv="fp8")).kv_bytes_per_token == 65536
    assert ModelShape.from_engine(engine(extra={})) is None


def test_decode_and_prefill_on_h100_by_hand(h100):
    s = ModelShape.from_engine(engine())
    # batch 1, empty context: 16.06 GB of weights over 3.35 TB/s = 4.794 ms (about 209 tokens/s at best)
    assert decode_step_ideal_s(s, h100, 1, 0) == pytest.approx(16.06e9 / 3.35e12)
    assert decode_step_ideal_s(s, h100, 1, 0) * 1e3 == pytest.approx(4.794, abs=1e-3)
    # batch 32 x 1024 tokens of KV: + 4.295 GB read -> 6.076 ms, still memory bound
    assert decode_step_ideal_s(s, h100, 32, 1024) * 1e3 == pytest.approx(6.076, abs=1e-3)
    # batch 512: 2 x 8.03e9 x 512 FLOP / 989.4 TFLOPS = 8.311 ms > 4.794 ms of weights: compute bound
    assert decode_step_ideal_s(s, h100, 512, 0) * 1e3 == pytest.approx(8.311, abs=1e-3)
    # prefill of 1000 tokens: 2 x 8.03e9 x 1000 / 989.4e12 = 16.23 ms
    assert prefill_ideal_s(s, h100, 1000) * 1e3 == pytest.approx(16.232, abs=1e-3)
    # FP8 weights: half the bytes, and the FP8 peak
    s8 = ModelShape.from_engine(engine(dtype_bytes=1))
    assert decode_step_ideal_s(s8, h100, 1, 0) * 1e3 == pytest.approx(2.397, abs=1e-3)


def synthetic_run(run_id: str, hw, eff: float, rps: float = 4.0, n_in: int = 1000, n_out: int = 200) -> RunResult:
    """A run whose timings are exactly what the model predicts at efficiency `eff`."""
    s = ModelShape.from_engine(engine())
    e = Efficiency(eff, eff, 1.5, 1.2, "test")
    wl = Workload(n_in, n_out, concurrency=8.0)
    t = predict(s, hw, wl, e)
    e2e_ms = 8.0 / rps * 1e3  # Little's law gives concurrency 8 back
    summary = RunSummary.from_dict({
        "mode": "open", "n_ok": 100, "n_in_total": n_in * 100, "n_out_total": n_out * 100, "requests_per_s": rps,
        "ttft_ms": Distribution(100, p50=t.ttft_s * 1e3, p95=t.ttft_s * 1.5e3).to_dict(),
        "tpot_ms": Distribution(100, mean=t.tpot_s * 1e3, p50=t.tpot_s * 1e3, p95=t.tpot_s * 1.2e3).to_dict(),
        "e2e_ms": Distribution(100, mean=e2e_ms).to_dict()})
    return RunResult(run_id, "2026-11-21T00:00:00Z", {"name": "copilot"}, {"mode": "open"}, SLOs(), engine(), {},
                     summary, {}, Verdict("VALID"))


def test_calibration_recovers_efficiency_and_tails(h100):
    eff = calibrate([(synthetic_run("a", h100, 0.4), h100)])
    assert eff.decode == pytest.approx(0.4) and eff.prefill == pytest.approx(0.4)
    assert eff.ttft_tail == pytest.approx(1.5) and eff.tpot_tail == pytest.approx(1.2)
    assert "1 run(s) on h100-sxm" in eff.basis
    assert calibrate([]) is None  # no run, no efficiency: none is assumed


def test_backtest_is_leave_one_out(h100):
    """The recommender's backtest (advisor.recommend.error_bars, the one computation behind its error bars)."""
    from advisor.recommend.error_bars import _loo

    a, b = _loo([(synthetic_run("a", h100, 0.4), h100), (synthetic_run("b", h100, 0.6), h100)])
    assert a.calibration == "leave-one-out"
    # run a is predicted with b's efficiency: times are ideal / 0.6 instead of ideal / 0.4 -> -1/3
    assert a.ttft_error == pytest.approx(0.4 / 0.6 - 1)
    assert b.ttft_error == pytest.approx(0.6 / 0.4 - 1)
    assert _loo([(synthetic_run("a", h100, 0.4), h100)]) == []  # one run predicts nothing: no in-sample row


def test_estimate_respects_slos_and_memory(h100):
    s = ModelShape.from_engine(engine())
    wl = Workload(1000, 200, 1.0)
    e = Efficiency(0.5, 0.5, 1.5, 1.2, "test")
    loose = estimate(s, h100, wl, e, ttft_slo_ms=2000, tpot_slo_ms=200)
    tight = estimate(s, h100, wl, e, ttft_slo_ms=2000, tpot_slo_ms=30)
    assert loose.capacity_rps and tight.capacity_rps and loose.capacity_rps > tight.capacity_rps
    assert tight.batch < loose.batch and tight.tpot_p_ms <= 30
    assert estimate(s, h100, wl, e, ttft_slo_ms=1, tpot_slo_ms=None).capacity_rps is None
    l4 = load_catalog().get("l4")  # 24 GB: 16 GB of weights fit one, with little room for KV
    on_l4 = estimate(s, l4, wl, e, None, None)
    assert on_l4.devices == 1 and any("KV-cache memory" in a for a in on_l4.assumptions)
    big = ModelShape(70e9, 80, 8, 128, 2, 2)  # 154 GB with 10% spare over 72 GB usable: 3 -> 4-way tensor parallel
    assert estimate(big, h100, wl, e, None, None).devices == 4
    cpu = load_catalog().get("cpu-2core-vm")
    assert estimate(big, cpu, wl, e, None, None).fits is False
