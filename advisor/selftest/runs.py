"""The selftest's served runs, through `advisor bench`'s own machinery (engine in its own process, telemetry on).

`served_check`: a short `chat` run on own_engine; it passes when every request
completed with exactly the tokens asked, and the engine process was sampled
(CPU, memory; on CUDA the GPU through NVML). `batching_check`: own (continuous)
and own-static (static batches) on the same short `bursty` schedule; a
difference in the engines' errors fails it, continuous not beating static on
p95 E2E is a warning (one short run on a busy machine can turn either way).
Runs are saved under the selftest's folder, so `advisor show` opens them.
"""

from __future__ import annotations

from typing import Any

from adapters import BUILTIN_ENGINE, BUILTIN_STATIC_ENGINE
from advisor.selftest.model import Check, SelftestConfig


def _bench(cfg: SelftestConfig, scenario: str, engine: str, duration_s: float, warmup_s: float) -> Any:
    from advisor.run.bench import BenchConfig, bench_once
    from scenarios.schedule import Overrides

    bc = BenchConfig(scenario=scenario, engine=engine, model=cfg.served_model, out_dir=cfg.out_dir / "runs",
                     engine_options={"device": cfg.device}, telemetry_interval_s=0.5, timeout_s=120.0,
                     overrides=Overrides(duration_s=duration_s, warmup_s=warmup_s, seed=0))
    return bench_once(bc)


def _figures(r: Any) -> dict[str, Any]:
    s, t = r.summary, r.telemetry
    gpu = t.gpu or {}
    return {"run": str(r.path), "verdict": r.verdict.status, "n_ok": s.n_ok, "n_errors": s.n_errors,
            "requests_per_s": s.requests_per_s, "output_tokens_per_s": s.output_tokens_per_s,
            "ttft_ms_p50": s.ttft_ms.at(50), "ttft_ms_p95": s.ttft_ms.at(95), "tpot_ms_p50": s.tpot_ms.at(50),
            "itl_ms_p99": s.itl_ms.at(99), "e2e_ms_p95": s.e2e_ms.at(95), "n_out_short": s.n_out_short,
            "token_count_mismatch": s.token_count_mismatch, "telemetry_samples": len(t.samples),
            "engine_cpu_percent_mean": t.cpu_percent_mean, "engine_rss_peak_mb": t.rss_peak_mb,
            "gpu_util_pct_mean": gpu.get("util_pct_mean"), "gpu_power_w_mean": gpu.get("power_w_mean"),
            "gpu_absent_reason": t.gpu_absent_reason}


def _run_problems(f: dict[str, Any]) -> list[str]:
    out = []
    if f["n_ok"] < 1:
        out.append("no request completed")
    if f["n_errors"]:
        out.append(f"{f['n_errors']} request(s) failed")
    if f["n_out_short"]:
        out.append(f"{f['n_out_short']} request(s) got fewer tokens than asked")
    if f["token_count_mismatch"]:
        out.append(f"{f['token_count_mismatch']} request(s) where the engine's and the client's token counts differ")
    return out


def served_check(cfg: SelftestConfig) -> Check:
    """A short served chat run with telemetry: every request exact, the engine process (and GPU) sampled."""
    r = _bench(cfg, "chat", BUILTIN_ENGINE, 4.0 if cfg.quick else 15.0, 1.0 if cfg.quick else 3.0)
    f = _figures(r)
    problems = _run_problems(f)
    if f["telemetry_samples"] < 1 or f["engine_cpu_percent_mean"] is None:
        problems.append("the engine process was not sampled (no CPU telemetry)")
    if cfg.device == "cuda" and f["gpu_util_pct_mean"] is None:
        problems.append(f"no GPU telemetry in the run ({f['gpu_absent_reason'] or 'NVML gave nothing'})")
    if problems:
        return Check("served", "Served run with telemetry", "fail",
                     f"chat on own ({cfg.served_model}, {cfg.device}): " + "; ".join(problems), f)
    gpu = (f", GPU {_n(f['gpu_util_pct_mean'])}% busy at {_n(f['gpu_power_w_mean'])} W"
           if f["gpu_util_pct_mean"] is not None else "")
    return Check("served", "Served run with telemetry", "pass",
                 f"chat on own ({cfg.served_model}, {cfg.device}): {f['n_ok']} requests, all exact, "
                 f"{_n(f['output_tokens_per_s'])} output tok/s, TTFT p50 {_n(f['ttft_ms_p50'])} ms, "
                 f"engine process at {_n(f['engine_cpu_percent_mean'])}% CPU{gpu}; verdict {f['verdict']}", f)


def _n(x: float | None, digits: int = 0) -> str:
    """A figure for a sentence; "n/a" where the run could not give it (too few requests for a percentile)."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def batching_check(cfg: SelftestConfig) -> Check:
    """Continuous (own) against static (own-static) batching on the same `bursty` schedule."""
    duration, warmup = (6.0, 1.0) if cfg.quick else (20.0, 3.0)
    runs = {engine: _figures(_bench(cfg, "bursty", engine, duration, warmup))
            for engine in (BUILTIN_ENGINE, BUILTIN_STATIC_ENGINE)}
    cont, static = runs[BUILTIN_ENGINE], runs[BUILTIN_STATIC_ENGINE]
    figures: dict[str, Any] = {"continuous": cont, "static": static}
    problems = [f"{name}: {p}" for name, f in (("continuous", cont), ("static", static)) for p in _run_problems(f)]
    if problems:
        return Check("batching", "Continuous against static batching", "fail",
                     "bursty: " + "; ".join(problems), figures)
    e2e = (static["e2e_ms_p95"] / cont["e2e_ms_p95"]) if cont["e2e_ms_p95"] and static["e2e_ms_p95"] else None
    ttft = (static["ttft_ms_p95"] / cont["ttft_ms_p95"]) if cont["ttft_ms_p95"] and static["ttft_ms_p95"] else None
    figures.update(p95_e2e_static_over_continuous=e2e, p95_ttft_static_over_continuous=ttft)
    words = (f"bursty ({cfg.served_model}, {cfg.device}): p95 E2E {_n(cont['e2e_ms_p95'])} ms continuous against "
             f"{_n(static['e2e_ms_p95'])} ms static ({_n(e2e, 2)}x), p95 TTFT {_n(ttft, 2)}x")
    if e2e is None or e2e < 1.0:
        return Check("batching", "Continuous against static batching", "warn",
                     f"{words}: continuous batching did not win this short run (a busy machine or too light a "
                     "load can do that; run `python benchmarks/batching.py` for a real comparison)", figures)
    return Check("batching", "Continuous against static batching", "pass", words, figures)
