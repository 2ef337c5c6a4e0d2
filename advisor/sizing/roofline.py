"""Roofline estimates for hardware that was not measured, calibrated on runs that were.

Ideal times (no overheads) from the model's shape and the hardware's peaks:
  decode step  >= max((weight bytes + KV bytes read) / bandwidth, 2 x params x batch / peak FLOPS)
  prefill      >= max(2 x params x prompt tokens / peak FLOPS, weight bytes / bandwidth)
Attention FLOPs in prefill and activation traffic are left out (small next to the
matmuls at the prompt lengths the scenarios use). Each ideal time is divided by an
efficiency factor (achieved / ideal) calibrated on measured runs of the same model shape, and
percentile SLOs use the measured p95/p50 tail ratios. No efficiency is ever assumed: with no run
to calibrate on, `calibrate` returns None and no estimate is made (the recommender says why).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from adapters.base import EngineInfo
from advisor.catalog.models import Hardware
from advisor.metrics.summary import RunSummary
from advisor.saved.store import RunResult
from fileform import FileForm

DEFAULT_TAIL = 1.5  # p95 / p50 when no run says otherwise
USABLE_MEMORY_FRACTION = 0.9
_KV_BYTES = {"fp8": 1, "int8": 1, "fp16": 2, "float16": 2, "bf16": 2, "bfloat16": 2, "fp32": 4, "float32": 4}


@dataclass(frozen=True)
class ModelShape:
    n_params: float
    n_layers: int
    n_kv_heads: int
    head_dim: int
    dtype_bytes: float  # bytes per weight as served
    kv_dtype_bytes: float

    @property
    def weight_bytes(self) -> float:
        return self.n_params * self.dtype_bytes

    @property
    def kv_bytes_per_token(self) -> float:
        return 2.0 * self.n_layers * self.n_kv_heads * self.head_dim * self.kv_dtype_bytes  # K and V

    @property
    def label(self) -> str:
        """'1.04B params x 2 B, 16 layers': the shape in words, as the backtest groups name it."""
        return f"{self.n_params / 1e9:.3g}B params x {self.dtype_bytes:g} B, {self.n_layers} layers"

    @classmethod
    def from_engine(cls, engine: EngineInfo) -> ModelShape | None:
        """From a run's engine (extra.n_params, extra.model_config, extra.dtype_bytes); None if absent."""
        extra = engine.extra
        cfg = extra.get("model_config") or {}
        try:
            n_heads = int(cfg["num_attention_heads"])
            head_dim = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // n_heads)
            dtype_bytes = float(extra["dtype_bytes"])
            kv = _KV_BYTES.get(str(engine.kv_cache_dtype or "").lower(), dtype_bytes)
            return cls(n_params=float(extra["n_params"]), n_layers=int(cfg["num_hidden_layers"]),
                       n_kv_heads=int(cfg.get("num_key_value_heads") or n_heads), head_dim=head_dim,
                       dtype_bytes=dtype_bytes, kv_dtype_bytes=float(kv))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Workload:
    """Mean tokens per request and mean requests in flight (Little's law: rate x mean E2E)."""

    n_in: float
    n_out: float
    concurrency: float

    @classmethod
    def from_summary(cls, s: RunSummary) -> Workload | None:
        n_ok = s.n_ok
        if n_ok <= 0 or not s.n_out_total:
            return None
        e2e = (s.e2e_ms.mean or 0.0) / 1000.0
        conc = max(1.0, float(s.requests_per_s or 0.0) * e2e)
        return cls(n_in=float(s.n_in_total) / n_ok, n_out=float(s.n_out_total) / n_ok, concurrency=conc)


@dataclass(frozen=True)
class Efficiency(FileForm):
    decode: float
    prefill: float
    ttft_tail: float  # p95 / p50
    tpot_tail: float
    basis: str  # "calibrated on N run(s) on <hw>"


def _bandwidth(hw: Hardware, devices: int) -> float:
    assert hw.memory_bw_gbps, f"{hw.id}: no memory bandwidth in the catalog (an unlisted part: nothing is estimated)"
    return hw.memory_bw_gbps * 1e9 * devices


def _peak_flops(hw: Hardware, shape: ModelShape, devices: int = 1) -> float:
    tflops = hw.peak_tflops(shape.dtype_bytes)
    assert tflops, f"{hw.id}: no dense peak TFLOPS in the catalog"
    return tflops * 1e12 * devices


def decode_step_ideal_s(shape: ModelShape, hw: Hardware, batch: float, context_tokens: float, devices: int = 1) -> float:
    """One decode step for `batch` sequences of `context_tokens` each, at 100% of peak."""
    bytes_moved = shape.weight_bytes + batch * context_tokens * shape.kv_bytes_per_token
    memory_s = bytes_moved / _bandwidth(hw, devices)
    compute_s = 2.0 * shape.n_params * batch / _peak_flops(hw, shape, devices)
    return max(memory_s, compute_s)


def prefill_ideal_s(shape: ModelShape, hw: Hardware, tokens: float, devices: int = 1) -> float:
    """Prefill of `tokens` prompt tokens at 100% of peak."""
    compute_s = 2.0 * shape.n_params * tokens / _peak_flops(hw, shape, devices)
    return max(compute_s, shape.weight_bytes / _bandwidth(hw, devices))


@dataclass(frozen=True)
class Timing:
    ttft_s: float  # typical (p50-like)
    tpot_s: float
    rps: float  # requests/s at this batch


def predict(shape: ModelShape, hw: Hardware, wl: Workload, eff: Efficiency, batch: float | None = None,
            devices: int = 1) -> Timing:
    """Typical TTFT, TPOT and request rate with `batch` requests in flight (default: the workload's)."""
    b = wl.concurrency if batch is None else batch
    prefill = prefill_ideal_s(shape, hw, max(wl.n_in, 1.0), devices) / eff.prefill
    step = decode_step_ideal_s(shape, hw, b, wl.n_in + wl.n_out / 2.0, devices) / eff.decode
    # continuous batching: on average b / n_out new prompts are prefilled per decode step
    tpot = step + (b / max(wl.n_out, 1.0)) * prefill
    return Timing(ttft_s=prefill, tpot_s=tpot, rps=b / (max(wl.n_out - 1.0, 0.0) * tpot + prefill))


def measured_s(value_ms: float | None) -> float | None:
    """A measured latency in seconds; None where it is missing or zero (nothing to calibrate on)."""
    return float(value_ms) / 1000.0 if value_ms else None


def calibrate(runs: list[tuple[RunResult, Hardware]]) -> Efficiency | None:
    """Median efficiency and tail ratios over (run, hardware it ran on) pairs that have a model shape.

    None when no pair can calibrate: there is then no efficiency to estimate with (none is assumed)."""
    dec: list[float] = []
    pre: list[float] = []
    ttail: list[float] = []
    ptail: list[float] = []
    hws: set[str] = set()
    for run, hw in runs:
        shape, wl, s = ModelShape.from_engine(run.engine), Workload.from_summary(run.summary), run.summary
        ttft, tpot = measured_s(s.ttft_ms.at(50)), measured_s(s.tpot_ms.mean)
        if shape is None or wl is None or not ttft or not tpot or hw.peak_tflops(shape.dtype_bytes) is None:
            continue
        prefill_ideal = prefill_ideal_s(shape, hw, max(wl.n_in, 1.0))
        e_pre = prefill_ideal / ttft
        interference = (wl.concurrency / max(wl.n_out, 1.0)) * ttft
        decode_time = tpot - interference if tpot - interference > 0.2 * tpot else tpot
        dec.append(decode_step_ideal_s(shape, hw, wl.concurrency, wl.n_in + wl.n_out / 2.0) / decode_time)
        pre.append(e_pre)
        hws.add(hw.id)
        for dist, out in ((s.ttft_ms, ttail), (s.tpot_ms, ptail)):
            p50, p95 = measured_s(dist.at(50)), measured_s(dist.at(95))
            if p50 and p95:
                out.append(max(1.0, p95 / p50))
    if not dec:
        return None
    return Efficiency(decode=min(1.0, statistics.median(dec)), prefill=min(1.0, statistics.median(pre)),
                      ttft_tail=statistics.median(ttail) if ttail else DEFAULT_TAIL,
                      tpot_tail=statistics.median(ptail) if ptail else DEFAULT_TAIL,
                      basis=f"calibrated on {len(dec)} run(s) on {', '.join(sorted(hws))}")


@dataclass(frozen=True)
class BacktestRow(FileForm):
    run_id: str
    hardware_id: str
    ttft_ms_measured: float
    ttft_ms_estimated: float
    tpot_ms_measured: float
    tpot_ms_estimated: float
    calibration: str  # "leave-one-out" (advisor.recommend.error_bars: the one backtest)

    @property
    def ttft_error(self) -> float:
        return self.ttft_ms_estimated / self.ttft_ms_measured - 1.0

    @property
    def tpot_error(self) -> float:
        return self.tpot_ms_estimated / self.tpot_ms_measured - 1.0

    def to_dict(self) -> dict[str, Any]:
        return {**FileForm.to_dict(self), "ttft_error": self.ttft_error, "tpot_error": self.tpot_error}


@dataclass(frozen=True)
class Estimate(FileForm):
    """A configuration on catalog hardware that was not measured: capacity under the SLOs."""

    hardware_id: str
    devices: int  # per replica (tensor parallel when the weights do not fit one device)
    batch: int
    capacity_rps: float | None  # None: no batch meets the SLOs
    ttft_p_ms: float  # at the SLO percentile (tail ratio applied)
    tpot_p_ms: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    assumptions: tuple[str, ...]
    fits: bool = True


def devices_needed(shape: ModelShape, hw: Hardware) -> int | None:
    """Devices to hold the weights plus 10%, rounded up to a power of two as tensor parallelism needs
    (None: a CPU instance that cannot hold them)."""
    n = math.ceil(shape.weight_bytes * 1.1 / (hw.memory_gb * 1e9 * USABLE_MEMORY_FRACTION))
    if hw.kind == "cpu":
        return 1 if n <= 1 else None
    return 1 << max(0, n - 1).bit_length()


def estimate(shape: ModelShape, hw: Hardware, wl: Workload, eff: Efficiency, ttft_slo_ms: float | None,
             tpot_slo_ms: float | None, max_batch: int = 1024) -> Estimate:
    """The largest batch (power of two) whose p-th percentile TTFT and TPOT meet the SLOs, and its rate."""
    devices = devices_needed(shape, hw)
    notes = [f"roofline on {hw.name}: {hw.memory_bw_gbps:g} GB/s, {hw.peak_tflops(shape.dtype_bytes)} dense TFLOPS",
             f"efficiency decode {eff.decode:.2f}, prefill {eff.prefill:.2f} ({eff.basis}), assumed to carry over",
             f"p95/p50 tail ratio TTFT {eff.ttft_tail:.2f}, TPOT {eff.tpot_tail:.2f}",
             f"workload {wl.n_in:.0f} in / {wl.n_out:.0f} out tokens per request"]
    if devices is None:
        return Estimate(hw.id, 1, 0, None, math.inf, math.inf, 0.0, 0.0,
                        (*notes, f"weights ({shape.weight_bytes / 1e9:.1f} GB) do not fit {hw.memory_gb:g} GB"), fits=False)
    if devices > 1:
        notes.append(f"{devices}-way tensor parallel, bandwidth and FLOPS assumed to scale linearly")
    kv_room = hw.memory_gb * 1e9 * devices * USABLE_MEMORY_FRACTION - shape.weight_bytes
    best: tuple[int, Timing] | None = None
    first = predict(shape, hw, wl, eff, batch=1, devices=devices)
    b = 1
    while b <= max_batch:
        if b * (wl.n_in + wl.n_out) * shape.kv_bytes_per_token > kv_room:
            notes.append(f"batch capped at {b // 2 or 1} by KV-cache memory")
            break
        t = predict(shape, hw, wl, eff, batch=b, devices=devices)
        ok = ((ttft_slo_ms is None or t.ttft_s * eff.ttft_tail * 1e3 <= ttft_slo_ms)
              and (tpot_slo_ms is None or t.tpot_s * eff.tpot_tail * 1e3 <= tpot_slo_ms))
        if not ok:
            break
        if best is None or t.rps > best[1].rps:
            best = (b, t)
        b *= 2
    if best is None:
        return Estimate(hw.id, devices, 1, None, first.ttft_s * eff.ttft_tail * 1e3, first.tpot_s * eff.tpot_tail * 1e3,
                        0.0, 0.0, (*notes, "even one request at a time misses the SLOs"))
    b, t = best
    return Estimate(hw.id, devices, b, t.rps, t.ttft_s * eff.ttft_tail * 1e3, t.tpot_s * eff.tpot_tail * 1e3,
                    t.rps * wl.n_in, t.rps * wl.n_out, tuple(notes))
