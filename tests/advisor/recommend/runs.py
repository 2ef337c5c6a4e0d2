"""Hand-made saved runs (advisor.run/1 dicts) for recommender, sweep and CLI tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisor.saved.store import RunResult

SMALL_CFG = {"hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 8,
             "head_dim": 64, "intermediate_size": 1536, "vocab_size": 32000}


def dist(p50: float, p95: float | None = None, mean: float | None = None, n: int = 200) -> dict[str, Any]:
    p95 = p95 if p95 is not None else p50 * 1.5
    return {"n": n, "mean": mean if mean is not None else p50, "stdev": 0.0, "min": p50 / 2, "max": p95 * 2,
            "p50": p50, "p90": p95 * 0.9, "p95": p95, "p99": p95 * 1.2, "p99_9": None}


def make_run(run_id: str = "r1", *, engine: str = "own", scenario: str = "copilot", rps: float = 2.0,
             ttft_ms: float = 200.0, tpot_ms: float = 40.0, status: str = "VALID", slo_ttft_ms: float = 800.0,
             slo_tpot_ms: float = 100.0, n_in: int = 256, n_out: int = 64, cpu_model: str = "Test CPU",
             cpu_cores: int = 2, gpus: list[dict[str, Any]] | None = None, precision: str = "fp32",
             dtype_bytes: int = 4, n_params: int = 40_000_000, error_rate: float = 0.0,
             hostname: str = "elsewhere") -> dict[str, Any]:
    """A run whose p95 TTFT/TPOT are `ttft_ms`/`tpot_ms` (p50 = two thirds of that)."""
    n_ok = 200
    e2e = ttft_ms / 1.5 + (n_out - 1) * tpot_ms / 1.5
    met = {"ttft": ttft_ms <= slo_ttft_ms, "tpot": tpot_ms <= slo_tpot_ms, "e2e": None}
    return {
        "schema": "advisor.run/1", "run_id": run_id, "created_utc": "2026-11-21T21:30:00Z",
        "scenario": {"name": scenario}, "schedule": {"mode": "open", "offered_rps": rps},
        "slos": {"ttft_ms": slo_ttft_ms, "tpot_ms": slo_tpot_ms, "e2e_ms": None, "percentile": 95.0},
        "engine": {"adapter": engine, "engine": engine, "version": "1", "device": "cpu", "model": "tiny",
                   "format": "hf", "precision": precision, "batching": "continuous", "threads": None,
                   "kv_cache_dtype": None,
                   "extra": {"n_params": n_params, "model_config": SMALL_CFG, "dtype_bytes": dtype_bytes}},
        "manifest": {"hardware": {"cpu_model": cpu_model, "cpu_cores": cpu_cores, "mem_gb": 16.0, "gpus": gpus or []},
                     "software": {}, "hostname": hostname},
        "summary": {"n_requests": n_ok, "n_ok": n_ok, "n_errors": 0, "error_rate": error_rate, "window_s": 100.0,
                    "mode": "open", "offered_rps": rps,
                    "ttft_ms": dist(ttft_ms / 1.5, ttft_ms), "tpot_ms": dist(tpot_ms / 1.5, tpot_ms),
                    "e2e_ms": dist(e2e, e2e * 1.5, mean=e2e),
                    "requests_per_s": rps, "input_tokens_per_s": rps * n_in, "output_tokens_per_s": rps * n_out,
                    "total_tokens_per_s": rps * (n_in + n_out), "goodput_rps": rps if all(v is not False for v in met.values()) else 0.0,
                    "slo_attainment": 1.0, "slo_met": met, "n_in_total": n_in * n_ok, "n_out_total": n_out * n_ok},
        "telemetry": {}, "verdict": {"status": status, "reasons": []},
    }


def loaded(runs: list[dict[str, Any]]) -> list[RunResult]:
    """The runs as the recommender gets them from a runs folder."""
    return [RunResult.from_dict(r) for r in runs]


def write_runs(root: Path, runs: list[dict[str, Any]]) -> Path:
    from advisor.saved.store import RECORDS_FILE, write_records

    for r in runs:
        d = root / r["run_id"]
        d.mkdir(parents=True, exist_ok=True)
        (d / "result.json").write_text(json.dumps(r))
        write_records(d / RECORDS_FILE, [])  # a complete run folder (the recommender reads summaries only)
    return root
