"""The sizing model against public end-to-end measurements: fit, leave-one-GPU-out, leave-one-model-out.

The evidence is aiconfigurator's `silicon_sample.csv` (ai-dynamo/aiconfigurator, Apache-2.0): TTFT and
TPOT measured on real GPUs at a fixed concurrency, per engine, model, precision, TP, ISL and OSL. Its
aggregated dense-model rows ship as `data/silicon_dense_agg.csv`. Each row is predicted from the tables of
its GPU and engine, whose times are taken as measured; the engine's four constants (serving.EngineProfile:
host time per step, TTFT overhead, prefill scale, wave share) are fitted by a grid search that minimises median + 0.3 x mean |ln(predicted /
measured)|, on:
- all rows of the engine (in-sample: the constants every estimate uses);
- the rows of the engine on the other GPUs (leave-one-GPU-out: a GPU the buyer does not own);
- the rows of the engine for the other models (leave-one-model-out);
- and, for `transferred`, the other GPUs' rows with the row's GPU's tables replaced by the nearest other
  GPU's, scaled by peaks (transfer.py): what an estimate on a GPU without tables is worth.
The range an estimate carries is the 90th percentile of |ln error| of its basis' out-of-sample rows
(leave-one-GPU-out for `tables`, the transfer backtest for `transferred`), as a factor: [v / f, v x f].
`write_fit` saves the constants and those factors together (data/fit.yaml), so a printed backtest and
the range an estimate prints come from one computation.
"""

from __future__ import annotations

import csv
import functools
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import yaml

from advisor.sizing.architecture import Architecture, load_architecture
from advisor.sizing.errors import SizingError
from advisor.sizing.memory import memory_fit
from advisor.sizing.precision import precision
from advisor.sizing.serving import EngineProfile, Terms, combine, latencies, terms
from advisor.sizing.step import Ops, Parallel
from advisor.sizing.tables import UnsupportedOp, load
from advisor.sizing.transfer import gpus, measured_peaks, transferred

DATA = Path(__file__).parent / "data"
SILICON = DATA / "silicon_dense_agg.csv"
FIT_FILE = DATA / "fit.yaml"
RANGE_PERCENTILE = 90
W_MEAN = 0.3  # the fit minimises median + W_MEAN x mean |ln error|: the median, kept from chasing outliers
_PRECISION = {"fp8": "fp8", "fp8_block": "fp8", "nvfp4": "fp4", "": "bf16"}
_H = np.arange(0.0, 6.01, 0.25)
_O = np.arange(0.0, 401.0, 10.0)
_S = np.arange(0.0, 1.001, 0.05)
_P = np.arange(0.5, 2.01, 0.1)


@dataclass(frozen=True)
class Row:
    """One measured configuration (a silicon_sample.csv row)."""

    id: str
    engine: str
    gpu: str
    model: str
    precision: str
    tp: int
    isl: int
    osl: int
    concurrency: int
    ttft_ms: float
    tpot_ms: float


def _arch_name(model_path: str) -> str:
    """An HF repo id as the architecture table knows it: quantized re-uploads keep the original's shape."""
    name = model_path.split("/")[-1]
    for suffix in ("-FP8", "-NVFP4", "-FP4"):
        name = name.removesuffix(suffix)
    return name


@functools.cache
def _arch(model_path: str) -> Architecture | None:
    for candidate in (model_path, _arch_name(model_path), _arch_name(model_path) + "-Instruct",
                      _arch_name(model_path).removesuffix("-Instruct")):
        try:
            return load_architecture(candidate)
        except SizingError:
            continue
    return None


def read_rows(path: Path = SILICON) -> tuple[list[Row], dict[str, int]]:
    """The aggregated, dense, single-pipeline rows of a silicon_sample.csv, and why the others were left out."""
    rows, skipped = [], defaultdict(int)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("mode", "agg") != "agg":
                skipped["disaggregated"] += 1
                continue
            if r.get("pp_size", "1") not in ("1", "1.0", "") or r.get("attention_dp_size", "1") not in ("1", "1.0", ""):
                skipped["pipeline or attention data parallelism"] += 1
                continue
            if _arch(r["model_path"]) is None:
                skipped[f"not a shipped dense architecture ({r['model_path']})"] += 1
                continue
            try:
                ttft, tpot = float(r["silicon_ttft_ms"]), float(r["silicon_tpot_ms"])
                row = Row(r["id"], r["backend"], r["system"], r["model_path"],
                          _PRECISION.get(r.get("gemm_quant_mode") or "", "bf16"), int(float(r["tp_size"])),
                          int(float(r["isl"])), int(float(r["osl"])), int(float(r["batch_size"])), ttft, tpot)
            except (KeyError, ValueError):
                skipped["a missing or unreadable figure"] += 1
                continue
            if not (ttft > 0 and tpot > 0):
                skipped["no measured TTFT or TPOT"] += 1
                continue
            rows.append(row)
    return rows, dict(skipped)


@functools.cache
def engine_settings() -> dict[str, dict]:
    return yaml.safe_load((DATA / "engines.yaml").read_text())["engines"]


def base_profile(engine: str) -> EngineProfile:
    e = engine_settings()[engine]
    return EngineProfile(engine, int(e["token_budget"]), int(e["max_batch"]),
                         host_floor_ms=float(e.get("host_floor_ms", 0.0)),
                         host_ms_per_seq=float(e.get("host_ms_per_seq", 0.0)),
                         host_ms_per_prompt_token=float(e.get("host_ms_per_prompt_token", 0.0)))


@functools.cache
def gpu_memory_gb(gpu: str) -> float:
    """A measured GPU's memory as the catalog states it (GiB), or as gpus.yaml does where the catalog lacks it."""
    g = gpus()["measured"][gpu]
    if g.get("memory_gb"):
        return float(g["memory_gb"])
    from advisor.catalog import load_catalog

    return load_catalog().hardware[g["catalog"]].memory_gb


def row_terms(row: Row, ops: Ops) -> Terms:
    arch, prec = _arch(row.model), precision(row.precision)
    fit = memory_fit(arch, prec, gpu_memory_gb(row.gpu), row.tp, row.isl, row.osl, row.engine)
    p = Parallel(arch, row.tp, prec.gemm_dtype, prec.kv_dtype == "fp8")
    return terms(ops, p, base_profile(row.engine), row.isl, row.osl, row.concurrency, max(fit.max_sequences, 1))


def _score(err: np.ndarray, axis: int = -1) -> np.ndarray:
    a = np.abs(err)
    return np.median(a, axis=axis) + W_MEAN * np.mean(a, axis=axis)


def fit_profile(engine: str, ts: list[Terms], ttft: list[float], tpot: list[float]) -> EngineProfile:
    """The engine's constants that best fit (terms, measured) pairs: TPOT first (host time), then TTFT.

    The GPU's time is the tables' as measured: a fitted scale on it fitted each engine's rows better and the GPUs
    left out worse (benchmarks/history/sizing.md)."""
    base = base_profile(engine)
    if not ts:
        return base
    arr = {k: np.array([getattr(t, k) for t in ts], dtype=float) for k in Terms.__dataclass_fields__}
    host = (base.host_floor_ms, base.host_ms_per_seq, base.host_ms_per_prompt_token)
    _, tp, _, _ = latencies(arr, _H[:, None], 0.0, 0.0, 1.0, *host)  # [h, row]
    h = float(_H[np.argmin(_score(np.log(tp) - np.log(np.array(tpot))))])
    tt, _, _, _ = latencies(arr, h, _O[None, :, None, None], _S[:, None, None, None], _P[None, None, :, None],
                            *host)  # [sync, overhead, prefill scale, row]
    sc = _score(np.log(tt) - np.log(np.array(ttft)))
    si, oi, pi = np.unravel_index(np.argmin(sc), sc.shape)
    best = (float(_O[oi]), float(_S[si]), float(_P[pi]))
    return replace(base, host_ms=h, ttft_ms=best[0], sync=best[1], prefill_scale=best[2])


@dataclass(frozen=True)
class Prediction:
    row: Row
    scheme: str  # in-sample, leave-one-gpu-out, leave-one-model-out, transferred
    ttft_ms: float
    tpot_ms: float
    source: str  # the tables used: gpu/engine, or "gpu <- nearest"

    @property
    def ttft_error(self) -> float:
        return self.ttft_ms / self.row.ttft_ms - 1.0

    @property
    def tpot_error(self) -> float:
        return self.tpot_ms / self.row.tpot_ms - 1.0


@dataclass(frozen=True)
class Backtest:
    predictions: tuple[Prediction, ...]
    profiles: dict[str, EngineProfile]  # in-sample, on every row of the engine
    skipped: dict[str, int]
    source: str

    def of(self, scheme: str) -> list[Prediction]:
        return [p for p in self.predictions if p.scheme == scheme]

    def factor(self, scheme: str, metric: str, engine: str | None = None) -> float:
        """exp(the RANGE_PERCENTILE-th percentile of |ln(predicted / measured)|) over `scheme`'s rows (of `engine`)."""
        errs = [abs(math.log1p(p.ttft_error if metric == "ttft" else p.tpot_error)) for p in self.of(scheme)
                if engine is None or p.row.engine == engine]
        return math.exp(float(np.percentile(errs, RANGE_PERCENTILE, method="higher"))) if errs else math.nan


def _fit_on(rows: list[Row], ts: dict[str, Terms], engine: str, keep) -> EngineProfile:  # type: ignore[no-untyped-def]
    sel = [r for r in rows if r.engine == engine and keep(r) and r.id in ts]
    return fit_profile(engine, [ts[r.id] for r in sel], [r.ttft_ms for r in sel], [r.tpot_ms for r in sel])


def run_backtest(path: Path = SILICON, schemes: Iterable[str] = ("in-sample", "leave-one-gpu-out",
                 "leave-one-model-out", "transferred")) -> Backtest:
    rows, skipped = read_rows(path)
    own: dict[str, Terms] = {}
    moved: dict[str, tuple[Terms, str]] = {}
    for r in rows:
        try:
            own[r.id] = row_terms(r, load(r.gpu, r.engine))
        except (UnsupportedOp, KeyError) as e:
            skipped[f"no tables: {e}"] = skipped.get(f"no tables: {e}", 0) + 1
            continue
        if "transferred" in schemes:
            try:
                ops = transferred(measured_peaks(r.gpu), r.engine, exclude=r.gpu)
                moved[r.id] = (row_terms(r, ops), f"{r.gpu} <- {ops.src.gpu}")
            except UnsupportedOp:
                pass
    rows = [r for r in rows if r.id in own]
    engines = sorted({r.engine for r in rows})
    profiles = {e: _fit_on(rows, own, e, lambda r: True) for e in engines}
    out: list[Prediction] = []
    cache: dict[tuple[str, str, str], EngineProfile] = {}
    for r in rows:
        for scheme in schemes:
            if scheme == "in-sample":
                prof = profiles[r.engine]
            elif scheme == "leave-one-model-out":
                key = (scheme, r.engine, r.model)
                if key not in cache:
                    shape = _arch(r.model)
                    cache[key] = _fit_on(rows, own, r.engine, lambda x, m=shape: _arch(x.model) != m)
                prof = cache[key]
            else:  # leave-one-gpu-out and transferred: nothing of the row's GPU
                key = ("gpu", r.engine, r.gpu)
                if key not in cache:
                    cache[key] = _fit_on(rows, own, r.engine, lambda x, g=r.gpu: x.gpu != g)
                prof = cache[key]
            if scheme == "transferred":
                if r.id not in moved:
                    continue
                t, src = moved[r.id]
            else:
                t, src = own[r.id], f"{r.gpu}/{r.engine}"
            s = combine(t, prof)
            out.append(Prediction(r, scheme, s.ttft_ms, s.tpot_ms, src))
    return Backtest(tuple(out), profiles, skipped, str(path))


def summary(bt: Backtest) -> dict:
    """Median |error| per scheme overall and per engine x GPU, the range factors and their coverage."""
    def med(ps: list[Prediction], metric: str) -> float:
        return statistics.median(abs(p.ttft_error if metric == "ttft" else p.tpot_error) for p in ps)

    out: dict = {"rows": len(bt.of("in-sample")), "skipped": bt.skipped, "schemes": {}}
    for scheme in ("in-sample", "leave-one-gpu-out", "leave-one-model-out", "transferred"):
        ps = bt.of(scheme)
        if not ps:
            continue
        cells = defaultdict(list)
        for p in ps:
            cells[f"{p.row.engine} x {p.row.gpu}"].append(p)
        out["schemes"][scheme] = {
            "rows": len(ps), "ttft_median_abs_error": med(ps, "ttft"), "tpot_median_abs_error": med(ps, "tpot"),
            "cells": {k: {"rows": len(v), "ttft": med(v, "ttft"), "tpot": med(v, "tpot")} for k, v in sorted(cells.items())}}
    return out


BASES = (("tables", "leave-one-gpu-out"), ("transferred", "transferred"))


def range_factors(bt: Backtest) -> dict[str, dict[str, dict[str, float]]]:
    """basis -> engine (or "all") -> metric -> factor: `tables` from leave-one-GPU-out, `transferred` from the
    transfer backtest; per engine, since engines differ in how well they are predicted."""
    engines = sorted({p.row.engine for p in bt.predictions})
    return {basis: {e: {m: bt.factor(scheme, m, None if e == "all" else e) for m in ("ttft", "tpot")}
                    for e in (*engines, "all")} for basis, scheme in BASES}


def coverage(bt: Backtest, factors: dict[str, dict[str, dict[str, float]]]) -> dict[str, float]:
    """Share of rows whose measured value lies in [v / f, v x f] (f: the row's engine's), per basis and metric."""
    out = {}
    for basis, scheme in (*BASES, ("tables, on leave-one-model-out rows", "leave-one-model-out")):
        f = factors["tables" if basis.startswith("tables") else basis]
        for m in ("ttft", "tpot"):
            ok = [abs(math.log1p(p.ttft_error if m == "ttft" else p.tpot_error))
                  <= math.log(f.get(p.row.engine, f["all"])[m]) + 1e-12 for p in bt.of(scheme)]
            out[f"{basis}: {m}"] = sum(ok) / len(ok) if ok else math.nan
    return out


def write_fit(bt: Backtest, dest: Path = FIT_FILE) -> dict:
    """Save the in-sample constants and the range factors from this one backtest (what estimates read)."""
    factors = range_factors(bt)
    fields = ("host_ms", "ttft_ms", "sync", "prefill_scale")
    src = Path(bt.source)
    doc = {"schema": "advisor.sizing.fit/2",
           "fitted_on": f"advisor/sizing/data/{src.name}" if src.resolve() == SILICON.resolve() else str(src),
           "rows": len(bt.of("in-sample")), "range_percentile": RANGE_PERCENTILE,
           "profiles": {e: {k: round(float(getattr(p, k)), 4) for k in fields} for e, p in bt.profiles.items()},
           "range_factors": {b: {e: {m: round(v, 4) for m, v in f.items()} for e, f in fs.items()}
                             for b, fs in factors.items()},
           "coverage": {k: round(v, 4) for k, v in coverage(bt, factors).items()},
           "made_by": "advisor estimate --backtest --write"}
    dest.write_text(yaml.safe_dump(doc, sort_keys=False))
    return doc


@functools.cache
def fitted() -> dict:
    """data/fit.yaml: the engines' constants and the range factors (written by write_fit)."""
    return yaml.safe_load(FIT_FILE.read_text())


def profile(engine: str) -> EngineProfile:
    """The engine's scheduling settings and fitted constants (own_engine: its own measured host time, nothing fitted:
    no public end-to-end run of it exists)."""
    f = fitted()["profiles"].get(engine)
    return base_profile(engine) if f is None else replace(base_profile(engine), **f)


def range_factor(basis: str, engine: str) -> tuple[dict[str, float], str]:
    """TTFT and TPOT factors of an estimate on `basis` for `engine`, and whose rows they come from."""
    fs = fitted()["range_factors"][basis]
    if engine in fs:
        return fs[engine], f"{engine}'s rows"
    return fs["all"], "all engines' rows (none of this engine's)"
