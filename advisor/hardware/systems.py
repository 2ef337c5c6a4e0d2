"""What makes two runs measurements of one system: the same model, engine, precision and hardware.

`advisor compare` gates an upgrade on two runs of one system; between two different systems (an H200
running a 1B model against a 2-vCPU VM running a tiny one) a "regression" is a comparison of machines, not a
change. The engine's version is not part of the system: an engine upgrade is what the gate is for.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from advisor.saved.store import RunResult

SHAPE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size",
              "vocab_size")


def param_count(n: float) -> str:
    """1.04e9 -> '1.04B', 894000 -> '894K'."""
    return next(f"{n / d:.3g}{u}" for d, u in ((1e9, "B"), (1e6, "M"), (1e3, "K"), (1.0, "")) if n >= d or d == 1.0)


def _model(run: RunResult) -> tuple[str, str]:
    """(what identifies the model: its shape where saved, else its folder's name; how to show it)."""
    cfg = run.engine.extra.get("model_config") or {}
    name = PurePath(str(run.engine.model or "?")).name
    n = run.engine.extra.get("n_params")
    shown = f"{name} ({param_count(float(n))} parameters)" if n else name
    shape = tuple(cfg.get(k) for k in SHAPE_KEYS)
    return (repr(shape) if any(shape) else name), shown


def _hardware(run: RunResult) -> str:
    man = run.manifest or {}
    hw: dict[str, Any] = man.get("server_hardware") or man.get("hardware") or {}
    gpus = ", ".join(str(g.get("name")) for g in hw.get("gpus") or []) or "no GPU"
    return f"{hw.get('cpu_model', '?')} x {hw.get('cpu_cores', '?')} cores, {gpus}"


def system(run: RunResult) -> dict[str, tuple[str, str]]:
    """The run's system, field by field: (what is compared, what is shown)."""
    e = run.engine
    engine = f"{e.adapter} ({e.engine})"
    precision = f"{e.precision}, KV {e.kv_cache_dtype or e.precision}"
    hardware = _hardware(run)
    return {"model": _model(run), "engine": (engine, engine), "precision": (precision, precision),
            "hardware": (hardware, hardware)}


def system_differences(a: RunResult, b: RunResult) -> list[str]:
    """'model tiny (...) vs llama-1b (...)': each field where A's and B's systems differ (empty: one system)."""
    sa, sb = system(a), system(b)
    return [f"{k} {sa[k][1]} vs {sb[k][1]}" for k in sa if sa[k][0] != sb[k][0]]
