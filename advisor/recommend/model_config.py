"""Estimated candidates for a model given by its config (`advisor recommend --model-config`), sized from tables.

One row per catalog GPU x legal TP degree x engine whose stack runs there x precision: the sizing model
(`advisor.sizing`) at the highest concurrency whose TTFT and TPOT meet the SLOs at the high end of their
ranges (`capacity_search.py`). A row rests on aiconfigurator's operator tables of that GPU ("estimated from
tables") or on the nearest measured GPU's tables scaled by peaks ("transferred from <gpu>"), never on an
assumed efficiency; its range is the backtest's. Replicas are sized at the low end of the capacity range.
Every option without a row (no stack claim, does not fit, no tables and no peaks, a precision the GPU or
engine lacks) gets a `NoRow` reason; CPUs get one line (the tables are GPU measurements).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from advisor.catalog import Catalog, Hardware
from advisor.metrics.intervals import Interval
from advisor.recommend.candidates import Candidate, Evidence, MeasuredRun
from advisor.recommend.capacity_search import Capacity, Limits, capacity, e2e_range_ms
from advisor.recommend.constraints import Constraints
from advisor.recommend.estimates import CANNOT, can_run
from advisor.recommend.no_row import NoRow
from advisor.recommend.request_lengths import request_lengths
from advisor.saved.store import RunResult
from advisor.sizing.architecture import Architecture
from advisor.sizing.backtest import engine_settings
from advisor.sizing.errors import SizingError
from advisor.sizing.estimate import ENGINES, Gpu, resolve_gpu
from advisor.sizing.memory import tp_degrees
from advisor.sizing.reserve import OWN_PROFILE
from advisor.sizing.transfer import nearest_measured
from scenarios.spec import Scenario

_SHAPE = (("hidden_size", "hidden_size"), ("num_hidden_layers", "n_layers"), ("num_attention_heads", "n_heads"),
          ("num_key_value_heads", "n_kv_heads"), ("intermediate_size", "intermediate_size"),
          ("vocab_size", "vocab_size"))


@dataclass(frozen=True)
class ModelConfigAsk:
    """What `--model-config` asks: a model by its shape, the precisions to size it in, the traffic it serves."""

    arch: Architecture
    precisions: tuple[str, ...]
    scenario: Scenario


def same_shape(run: RunResult, arch: Architecture) -> bool:
    """The run's engine.extra model_config has the config's hidden, layers, heads, KV heads, intermediate, vocab."""
    cfg = run.engine.extra.get("model_config") or {}
    try:
        got = {k: int(cfg[k]) for k, _ in _SHAPE if k != "num_key_value_heads"}
        got["num_key_value_heads"] = int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    except (KeyError, TypeError, ValueError):
        return False
    return all(got[k] == getattr(arch, a) for k, a in _SHAPE)


def catalog_engine(engine: str) -> str:
    """The engine's name in the catalog's engines.yaml (trtllm: tensorrt_llm)."""
    return str(engine_settings()[engine].get("catalog") or engine)


def _evidence(engine: str, gpu: Gpu, hw: Hardware, basis: str, factor_text: str) -> tuple[Evidence, str]:
    if basis == "tables":
        what = f"estimated from tables ({gpu.table}, aiconfigurator)"
        evidence: Evidence = "calibrated"
        note = f"{what}, backtested: {factor_text}"
    else:
        assert gpu.peaks is not None
        what = f"transferred from {nearest_measured(gpu.peaks, str(engine_settings()[engine]['tables']))}"
        if hw.stack == "cuda":
            evidence, note = "calibrated", f"{what} (tables scaled by peaks), backtested: {factor_text}"
        else:
            evidence, note = "uncalibrated", (f"{what}: the transfer backtest holds NVIDIA GPUs only, so its error on "
                                              f"{hw.stack} is unknown")
    if engine == OWN_PROFILE:  # its host time was measured, its error never backtested end to end
        evidence, note = "uncalibrated", (f"{what}; own_engine has no public end-to-end run to backtest it, so its "
                                          "range is all engines' and its error is unknown")
    return evidence, note


def _tested(engine: str, hw: Hardware, catalog: Catalog, basis: str, runs: list[MeasuredRun]) -> tuple[bool, str]:
    """Whether the engine was ever run on this hardware's stack: by aiconfigurator (its tables), advisor or a run."""
    name = catalog_engine(engine)
    if basis == "tables" or hw.stack == "cuda":  # every table is a CUDA GPU's measurement
        return True, f"{name}'s operators were measured on CUDA GPUs (aiconfigurator)"
    claim = ops.claim(hw.stack) if (ops := catalog.engine_ops(name)) is not None else None
    if any(mr.hardware is not None and mr.hardware.stack == hw.stack and mr.run.engine.adapter == name for mr in runs):
        return True, f"{name} was measured on {hw.stack} in these runs"
    if claim is not None and claim.advisor_ran:
        return True, f"advisor ran {name} on {hw.stack}: {claim.advisor_ran}"
    return False, f"untested there: neither aiconfigurator nor advisor ran {name} on {hw.stack}"


def _candidate(ask: ModelConfigAsk, hw: Hardware, gpu: Gpu, engine: str, prec: str, tp: int, cap: Capacity,
               slos: dict[str, float | None], length_note: str, catalog: Catalog, runs: list[MeasuredRun]
               ) -> Candidate | str:
    e = cap.estimate
    assert e.range is not None and e.ttft_ms is not None and e.tpot_ms is not None and e.requests_per_s is not None
    e2e, e2e_lo, e2e_hi = e2e_range_ms(e)
    figures = [e.ttft_ms, e.tpot_ms, e2e, e.requests_per_s, *(x for lo_hi in e.range.values() for x in lo_hi)]
    if not all(math.isfinite(x) for x in figures):
        return f"{CANNOT}: the sizing model gave a non-finite figure at concurrency {e.concurrency}"
    (t_lo, t_hi), (p_lo, p_hi), (r_lo, r_hi) = e.range["ttft_ms"], e.range["tpot_ms"], e.range["requests_per_s"]
    ft, fp = t_hi / e.ttft_ms, p_hi / e.tpot_ms
    factors = f"x/÷{ft:.2f} TTFT, x/÷{fp:.2f} TPOT"
    evidence, note = _evidence(engine, gpu, hw, str(e.basis), factors)
    tested, tested_why = _tested(engine, hw, catalog, str(e.basis), runs)
    ranges = {"ttft_ms": Interval.from_range(e.ttft_ms, t_lo, t_hi, e.error_note),
              "tpot_ms": Interval.from_range(e.tpot_ms, p_lo, p_hi, e.error_note),
              "e2e_ms": Interval.from_range(e2e, e2e_lo, e2e_hi, e.error_note)}
    conc = f"{e.concurrency:g}" if e.concurrency is not None else "?"
    if cap.passes:
        sizing = (f"capacity per replica {e.requests_per_s:.3g} req/s (range {r_lo:.3g}-{r_hi:.3g}) at {conc} requests "
                  f"in flight: the most whose TTFT and TPOT at the high end of their ranges meet the limits (doubling, "
                  f"then bisection, up to the {e.max_concurrency} sequences the KV cache holds); replicas are sized at "
                  f"the low end, {r_lo:.3g} req/s")
    else:
        sizing = "even one request in flight misses a limit at the high end of its range: no capacity"
    notes = (f"sized from the model config: {ask.arch.name} ({ask.arch.n_params / 1e9:.3g}B params; {ask.arch.source})",
             f"{'estimated from tables' if e.basis == 'tables' else 'transferred'}: {e.basis_note}", note, tested_why,
             length_note, sizing,
             "the estimate is of the typical request; the scenario's limits are p95, and the range's high end is "
             "what is checked", e.error_note, *e.notes)
    return Candidate(engine=catalog_engine(engine), hardware_id=hw.id, config=f"{prec} / TP {tp}", model=ask.arch.name,
                     source="estimated", run_id=None, devices=tp, capacity_rps=r_lo if cap.passes else None,
                     latency_ms={"ttft_ms": e.ttft_ms, "tpot_ms": e.tpot_ms, "e2e_ms": e2e}, slos=slos,
                     input_tokens_per_request=float(e.isl), output_tokens_per_request=float(e.osl), precision=prec,
                     assumptions=notes, n_params=float(ask.arch.n_params), evidence=evidence, evidence_note=note,
                     capacity_range=(Interval.from_range(e.requests_per_s, r_lo, r_hi, e.error_note)
                                     if cap.passes else None),
                     latency_range_ms=ranges, repeats=0, scenario=ask.scenario.name, device_class="gpu",
                     tested_there=tested, error_factor=max(ft, fp),
                     evidence_class="estimated from tables" if e.basis == "tables" else "transferred")


def _merged(subject: str, hw_id: str, whys: list[tuple[int, str]]) -> list[NoRow]:
    """One reason per distinct why, naming the TP degrees it holds for ('TP 2, 4, 8: ...')."""
    by: dict[str, list[int]] = defaultdict(list)
    for tp, why in whys:
        by[why].append(tp)
    return [NoRow(subject, hw_id, f"TP {', '.join(map(str, tps))}: {why}") for why, tps in by.items()]


def sized_candidates(ask: ModelConfigAsk, c: Constraints, catalog: Catalog, runs: list[MeasuredRun],
                     no_row: list[NoRow] | None = None, notes: list[str] | None = None) -> list[Candidate]:
    """Every GPU x TP x engine x precision the model config fits, sized for the scenario (see the module docstring).

    `runs` are the measured runs of the same model (their lengths are sized when present); `no_row` receives a
    reason per option without a row, `notes` one line when the model fits nowhere."""
    reasons: list[NoRow] = [] if no_row is None else no_row
    arch = ask.arch
    isl, osl, length_note = request_lengths(ask.scenario, [mr.run for mr in runs])
    slos = c.slos_for(ask.scenario.slos)
    lim = Limits(slos.get("ttft_ms"), slos.get("tpot_ms"), slos.get("e2e_ms"))
    out: list[Candidate] = []
    fits_somewhere = False
    for hw in catalog.hardware.values():
        if hw.unlisted or hw.measured:
            continue
        if hw.kind != "gpu":
            reasons.append(NoRow(arch.name, hw.id, f"{CANNOT} from a model config: the sizing model's operator tables "
                                 "are GPU measurements; a measured run of the model on this CPU sizes it"))
            continue
        try:
            gpu = resolve_gpu(hw.id, catalog)
        except SizingError as err:
            reasons.append(NoRow(arch.name, hw.id, f"{CANNOT}: {err}"))
            continue
        for engine in ENGINES:
            name = catalog_engine(engine)
            engine_cfg = engine_settings()[engine]
            if not can_run(name, hw, catalog):
                reasons.append(NoRow(f"{name} ({arch.name})", hw.id, f"{name} has no claim to run on {hw.stack} "
                                     "(engines.yaml)"))
                continue
            for prec in ask.precisions:
                subject = f"{name} ({arch.name}, {prec})"
                if prec not in engine_cfg.get("precisions", [prec]):
                    reasons.append(NoRow(subject, hw.id, f"{name} is sized in {', '.join(engine_cfg['precisions'])} only"))
                    continue
                whys: list[tuple[int, str]] = []
                degrees = tp_degrees(arch)
                if engine == OWN_PROFILE and len(degrees) > 1:  # one line, not one per degree
                    reasons.append(NoRow(subject, hw.id, f"TP {', '.join(map(str, degrees[1:]))}: own_engine runs on "
                                         "one GPU (no tensor parallelism); vllm, sglang or tensorrt_llm shard a model"))
                    degrees = degrees[:1]
                for tp in degrees:
                    cap = capacity(arch, gpu, tp, engine, prec, isl, osl, lim)
                    fits_somewhere = fits_somewhere or cap.estimate.fits
                    if not cap.estimate.estimated:
                        whys.append((tp, cap.estimate.why or f"{CANNOT}: no figure"))
                        continue
                    row = _candidate(ask, hw, gpu, engine, prec, tp, cap, slos, length_note, catalog, runs)
                    if isinstance(row, str):
                        whys.append((tp, row))
                    else:
                        out.append(row)
                reasons.extend(_merged(subject, hw.id, whys))
    if not fits_somewhere and notes is not None:
        notes.append(f"{arch.name} fits no catalog GPU at TP {', '.join(map(str, tp_degrees(arch)))} in "
                     f"{', '.join(ask.precisions)}; each GPU's line says by how much")
    return out
