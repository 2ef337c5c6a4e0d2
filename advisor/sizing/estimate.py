"""One sizing estimate: a model (its shape only) on a GPU x TP degree with an engine, at a load.

It answers in the order a buyer asks: does it fit (memory.py), how many sequences the KV cache holds,
and then TTFT, TPOT, the ITL tail, tokens/s and requests/s from the engine's steps on the GPU:
- `tables`: the GPU has measured operator tables for the engine (aiconfigurator's, data/tables/);
- `transferred`: it has none, and the nearest measured GPU's tables are scaled by the two GPUs' peaks
  (transfer.py);
and a range on each figure, [v / f, v x f], f from the backtest of that basis (backtest.py, data/fit.yaml).
Whatever cannot be estimated says why in one line (`why`), and nothing is infinite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from advisor.catalog import Catalog, Hardware
from advisor.sizing.architecture import Architecture
from advisor.sizing.backtest import engine_settings, fitted, profile, range_factor
from advisor.sizing.errors import SizingError
from advisor.sizing.memory import MemoryFit, memory_fit, tp_degrees
from advisor.sizing.precision import Precision
from advisor.sizing.reserve import OWN_PROFILE, Engine
from advisor.sizing.serving import EngineProfile, Serving, combine, terms
from advisor.sizing.step import Ops, Parallel
from advisor.sizing.tables import UnsupportedOp, load, source
from advisor.sizing.transfer import Peaks, gpus, measured_peaks, transferred
from fileform import FileForm

Basis = Literal["tables", "transferred", "roofline"]
ENGINES: tuple[Engine, ...] = get_args(Engine)


@dataclass(frozen=True)
class Load:
    """What the estimate is asked at: requests in flight, a request rate, or the most the option serves."""

    concurrency: float | None = None
    rate: float | None = None
    max_throughput: bool = False

    def __post_init__(self) -> None:
        given = sum((self.concurrency is not None, self.rate is not None, self.max_throughput))
        if given != 1:
            raise SizingError("give one load: --concurrency N, --rate R or --max-throughput")
        for name, v in (("concurrency", self.concurrency), ("rate", self.rate)):
            if v is not None and not (math.isfinite(v) and 0 < v <= 1e6):
                raise SizingError(f"--{name} {v:g}: give a number above 0 and at most 1e6")

    def __str__(self) -> str:
        if self.max_throughput:
            return "max throughput"
        return f"concurrency {self.concurrency:g}" if self.concurrency is not None else f"rate {self.rate:g} req/s"


@dataclass(frozen=True)
class Gpu:
    """A GPU the estimate can be made on: its catalog entry (if any), peaks, memory, and its tables' name."""

    id: str
    name: str
    memory_gb: float
    stack: str
    table: str | None  # aiconfigurator's name when measured tables exist
    peaks: Peaks | None  # None: the catalog lacks a peak or the link, so nothing is transferred to it


def resolve_gpu(hw_id: str, catalog: Catalog) -> Gpu:
    """A catalog id (h200, b200, mi300x, ...) or a measured GPU's table name (gb200, h200_sxm)."""
    measured = gpus()["measured"]
    table_of = {g["catalog"]: t for t, g in measured.items() if g.get("catalog")}
    if hw_id in measured and not measured[hw_id].get("catalog"):
        g = measured[hw_id]
        return Gpu(hw_id, hw_id, float(g["memory_gb"]), "cuda", hw_id, measured_peaks(hw_id))
    if hw_id in measured:
        hw_id = measured[hw_id]["catalog"]
    hw = catalog.hardware.get(hw_id)
    if hw is None:
        known = sorted([h.id for h in catalog.hardware.values() if h.kind == "gpu"] +
                       [t for t, g in measured.items() if not g.get("catalog")])
        raise SizingError(f"unknown GPU {hw_id!r}: give one of {', '.join(known)} (see `advisor hardware`)")
    return Gpu(hw.id, hw.name, hw.memory_gb, hw.stack, table_of.get(hw.id), _catalog_peaks(hw))


def _catalog_peaks(hw: Hardware) -> Peaks | None:
    link = gpus().get("links", {}).get(hw.id, {}).get("link_gbps")
    table = next((t for t, g in gpus()["measured"].items() if g.get("catalog") == hw.id), None)
    if table is not None:
        return measured_peaks(table)
    if hw.kind != "gpu" or not hw.memory_bw_gbps or not hw.bf16_tflops_dense:
        return None
    return Peaks(hw.id, hw.bf16_tflops_dense, hw.fp8_tflops_dense, None, hw.memory_bw_gbps, link)


@dataclass(frozen=True)
class SizingEstimate(FileForm):
    model: str
    hardware: str
    hardware_name: str
    tp: int
    engine: str
    precision: str
    isl: int
    osl: int
    load: str
    fits: bool
    why: str | None  # one line when there is no estimate (does not fit, cannot be estimated, rate not served)
    max_concurrency: int  # sequences of isl + osl the KV cache holds at once (capped by the engine's batch)
    concurrency: float | None = None  # requests in flight at the estimate
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    itl_p99_ms: float | None = None  # a decode step that carries a prompt chunk
    output_tok_s: float | None = None  # the whole TP group
    total_tok_s: float | None = None
    requests_per_s: float | None = None
    range: dict[str, tuple[float, float]] | None = None  # lo, hi per figure
    basis: Basis | None = None
    basis_note: str = ""
    error_note: str = ""
    weights_gb_per_gpu: float = 0.0
    kv_gb_per_gpu: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def estimated(self) -> bool:
        return self.fits and self.why is None and self.ttft_ms is not None


def _ops(gpu: Gpu, engine: str, tp: int) -> tuple[Ops, Basis, str]:
    tables = engine_settings()[engine]["tables"]
    if gpu.table is not None and tables in source()["tables"].get(gpu.table, {}):
        t = load(gpu.table, tables)
        return t, "tables", f"{gpu.table} tables of {tables} {t.version} (aiconfigurator, measured)"
    if gpu.peaks is None:
        raise SizingError(f"{gpu.id}: no measured tables and no peaks in the catalog to transfer them by")
    if tp > 1 and gpu.peaks.link_gbps is None:
        raise SizingError(f"{gpu.id}: GPU-to-GPU bandwidth not stated (sizing/data/gpus.yaml), so TP {tp} "
                          "cannot be estimated")
    ops = transferred(gpu.peaks, tables)
    return ops, "transferred", (f"no tables for {gpu.id}: {ops.src.gpu}'s {tables} {ops.src.version} tables scaled "
                                f"by peaks ({gpu.peaks.mem_bw_gbps:g} against {ops.src_peaks.mem_bw_gbps:g} GB/s, "
                                f"{gpu.peaks.bf16_tflops:g} against {ops.src_peaks.bf16_tflops:g} BF16 TFLOPS)")


def _at_rate(ops: Ops, p: Parallel, e: EngineProfile, arch_isl: int, osl: int, rate: float,
             cap: int) -> tuple[Serving, bool]:
    """The closed loop whose throughput is `rate` (bisection on requests in flight); False: not reachable."""
    def at(c: float) -> Serving:
        return combine(terms(ops, p, e, arch_isl, osl, c, cap), e)
    top = at(float(cap))
    if top.requests_per_s < rate:
        return top, False
    lo, hi = 1.0, float(cap)
    if at(lo).requests_per_s >= rate:
        return at(lo), True
    for _ in range(40):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if at(mid).requests_per_s < rate else (lo, mid)
        if hi - lo < 0.01:
            break
    return at(hi), True


def _refuse(arch: Architecture, gpu: Gpu, tp: int, engine: str, prec: Precision, isl: int, osl: int, load: Load,
            why: str, fit: MemoryFit | None = None) -> SizingEstimate:
    return SizingEstimate(arch.name, gpu.id, gpu.name, tp, engine, prec.name, isl, osl, str(load),
                          fits=fit is not None and fit.fits, why=why,
                          max_concurrency=fit.max_sequences if fit is not None else 0,
                          weights_gb_per_gpu=fit.weights_gb_per_gpu if fit is not None else 0.0,
                          kv_gb_per_gpu=fit.kv_gb_per_gpu if fit is not None else 0.0,
                          notes=fit.notes if fit is not None else ())


def estimate(arch: Architecture, gpu: Gpu, tp: int, engine: str, prec: Precision, isl: int, osl: int,
             load: Load) -> SizingEstimate:
    """The estimate (see the module docstring); never raises for an option that cannot be estimated."""
    if engine not in ENGINES:
        raise SizingError(f"unknown engine {engine!r} for an estimate: choose one of {', '.join(ENGINES)}")
    if isl < 1 or osl < 1 or isl + osl > 10_000_000:
        raise SizingError(f"--isl {isl} --osl {osl}: give at least 1 token each, at most 10,000,000 together")
    declared = engine_settings()[engine]

    def no(why: str, fit: MemoryFit | None = None) -> SizingEstimate:
        return _refuse(arch, gpu, tp, engine, prec, isl, osl, load, why, fit)

    if gpu.stack not in declared["stacks"]:
        return no(f"{engine} has no claim to run on {gpu.stack} ({gpu.name}): {declared['source']}")
    if prec.name not in declared.get("precisions", [prec.name]):
        return no(f"{engine} is sized in {', '.join(declared['precisions'])} only")
    if tp not in tp_degrees(arch):
        return no(f"TP {tp} does not divide {arch.name}'s {arch.n_heads} attention heads "
                  f"(legal: {', '.join(map(str, tp_degrees(arch)))})")
    fit = memory_fit(arch, prec, gpu.memory_gb, tp, isl, osl, engine)
    if not fit.fits:
        return no(fit.why or "does not fit", fit)
    e = profile(engine)
    cap = max(1, min(fit.max_sequences, e.max_batch))
    try:
        ops, basis, basis_note = _ops(gpu, engine, tp)
        p = Parallel(arch, tp, prec.gemm_dtype, prec.kv_dtype == "fp8")
        reached = True
        if load.rate is not None:
            s, reached = _at_rate(ops, p, e, isl, osl, load.rate, cap)
        else:
            c = float(cap) if load.max_throughput else float(load.concurrency or 1.0)
            s = combine(terms(ops, p, e, isl, osl, c, cap), e)
    except (UnsupportedOp, SizingError) as err:
        return no(f"cannot be estimated: {err}", fit)
    f, whose = range_factor(basis, engine)
    ft, fp = float(f["ttft"]), float(f["tpot"])
    e2e = s.ttft_ms + (osl - 1) * s.tpot_ms
    e2e_lo, e2e_hi = s.ttft_ms / ft + (osl - 1) * s.tpot_ms / fp, s.ttft_ms * ft + (osl - 1) * s.tpot_ms * fp
    rng = {"ttft_ms": (s.ttft_ms / ft, s.ttft_ms * ft), "tpot_ms": (s.tpot_ms / fp, s.tpot_ms * fp),
           "itl_p99_ms": (s.itl_p99_ms / fp, s.itl_p99_ms * fp),
           "requests_per_s": (s.requests_per_s * e2e / e2e_hi, s.requests_per_s * e2e / e2e_lo)}
    rng["output_tok_s"] = tuple(x * osl for x in rng["requests_per_s"])  # type: ignore[assignment]
    rng["total_tok_s"] = tuple(x * (isl + osl) for x in rng["requests_per_s"])  # type: ignore[assignment]
    pct = fitted()["range_percentile"]
    error_note = (f"range x/÷{ft:.2f} TTFT, x/÷{fp:.2f} TPOT: the {pct}th percentile of |error| of "
                  + ("leave-one-GPU-out" if basis == "tables" else "transfer") + f" predictions of {whose} among "
                  f"{fitted()['rows']} measured rows (aiconfigurator silicon_sample.csv; advisor estimate --backtest)")
    notes = [f"{engine}: {declared['source']}"]
    if engine == OWN_PROFILE:
        notes.append(f"own_engine's host time per step {e.host_floor_ms:g} ms + {e.host_ms_per_seq:g} ms per sequence "
                     f"+ {e.host_ms_per_prompt_token:g} ms per prompt token (measured on an H200): a faster GPU does "
                     "not make it faster; own has no served run in the public evidence, so its range is all "
                     "engines' rows'")
    else:
        notes.append(f"engine constants fitted on public measurements: host {e.host_ms:g} ms/step, TTFT "
                     f"+{e.ttft_ms:g} ms, prefill x{e.prefill_scale:g}, wave share {e.sync:g} (GPU time as the "
                     "tables measured it)")
    if load.rate is not None:
        notes.append("a rate is sized as the closed loop whose throughput equals it (Little's law); random "
                     "arrivals queue more than that, so read TTFT as a lower bound at that rate")
    why = None
    if not reached:
        why = (f"{load.rate:g} req/s is more than one replica serves: at most {s.requests_per_s:.3g} req/s with "
               f"{cap} in flight; add replicas")
    return SizingEstimate(arch.name, gpu.id, gpu.name, tp, engine, prec.name, isl, osl, str(load), True, why,
                          cap, s.concurrency, s.ttft_ms, s.tpot_ms, s.itl_p99_ms, s.output_tok_s, s.total_tok_s,
                          s.requests_per_s, rng, basis, basis_note, error_note, fit.weights_gb_per_gpu,
                          fit.kv_gb_per_gpu, (*notes, *fit.notes))
