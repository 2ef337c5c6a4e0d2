"""The sizing model against public measurements and advisor's own GPU runs, and how long it takes.

1. The backtest (advisor/sizing/backtest.py) on the 1,063 aggregated dense-model rows of aiconfigurator's
   silicon_sample.csv: median |error| of TTFT and TPOT in-sample, leave-one-GPU-out, leave-one-model-out and
   transferred; the same per engine x GPU; the range factors and how many rows they hold; vLLM's TTFT MAPE
   beside aiconfigurator's own published 18% (its docs/design, for its fitted vLLM model).
2. own_engine on the H200 (../shared/gpu-runs/h200-2026-11-26): the estimate against both served runs; the
   host-time constants come from the closed-loop run, so the open-loop run is the check.
3. Time: one estimate, `advisor estimate --hardware all --engine all`, `advisor recommend --model-config` over
   the catalog for an 8B and a 70B (and that every option there has a row or a reason).

    python benchmarks/sizing.py [--runs ../shared/gpu-runs/h200-2026-11-26] [--md out.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from advisor.catalog import load_catalog
from advisor.sizing import backtest as B
from advisor.sizing.architecture import from_config, load_architecture
from advisor.sizing.estimate import Load, estimate, resolve_gpu
from advisor.sizing.precision import precision

TARGETS = {"in-sample": (0.20, 0.10), "leave-one-gpu-out": (0.20, 0.20)}  # (TTFT, TPOT) median |error| at most
AIC_VLLM_TTFT_MAPE = 0.18  # aiconfigurator docs: their fitted vLLM TTFT model's MAPE on their silicon file


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def backtest_section(out: list[str]) -> None:
    t0 = time.perf_counter()
    bt = B.run_backtest()
    took = time.perf_counter() - t0
    s = B.summary(bt)
    out.append(f"Backtest of {s['rows']:,} rows ({took:.1f} s), median |predicted / measured - 1|:\n")
    out.append("| scheme | TTFT | TPOT | target (TTFT / TPOT) | met |")
    out.append("|---|---|---|---|---|")
    for k, v in s["schemes"].items():
        tt, tp = v["ttft_median_abs_error"], v["tpot_median_abs_error"]
        tgt = TARGETS.get(k)
        met = "-" if tgt is None else ("TTFT " + ("met" if tt <= tgt[0] else "not met") + ", TPOT "
                                       + ("met" if tp <= tgt[1] else "not met"))
        out.append(f"| {k} | {_pct(tt)} | {_pct(tp)} | {'-' if tgt is None else f'<= {_pct(tgt[0])} / <= {_pct(tgt[1])}'} | {met} |")
    out.append("\nPer engine x GPU (TTFT / TPOT):\n")
    cols = [k for k in ("in-sample", "leave-one-gpu-out", "leave-one-model-out", "transferred") if k in s["schemes"]]
    out.append("| engine x GPU | rows | " + " | ".join(cols) + " |")
    out.append("|---|---|" + "---|" * len(cols))
    for cell, c in s["schemes"]["in-sample"]["cells"].items():
        vals = [s["schemes"][k]["cells"][cell] for k in cols]
        out.append(f"| {cell} | {c['rows']} | " + " | ".join(f"{_pct(v['ttft'])} / {_pct(v['tpot'])}" for v in vals) + " |")
    f = B.range_factors(bt)
    cov = B.coverage(bt, f)
    out.append(f"\nRange factors ({B.RANGE_PERCENTILE}th percentile of |ln error|; an estimate v reads [v / f, v x f]):\n")
    out.append("| basis | engine | TTFT | TPOT |")
    out.append("|---|---|---|---|")
    for basis, fs in f.items():
        for e, x in fs.items():
            out.append(f"| {basis} | {e} | x/÷{x['ttft']:.2f} | x/÷{x['tpot']:.2f} |")
    out.append("\nShare of measured rows inside their range: " + "; ".join(f"{k} {_pct(v)}" for k, v in cov.items()))
    vllm = [p for p in bt.of("in-sample") if p.row.engine == "vllm"]
    mape = statistics.mean(abs(p.ttft_error) for p in vllm)
    mape_logo = statistics.mean(abs(p.ttft_error) for p in bt.of("leave-one-gpu-out") if p.row.engine == "vllm")
    out.append(f"\nvLLM TTFT MAPE: in-sample {_pct(mape)}, leave-one-GPU-out {_pct(mape_logo)}, against "
               f"aiconfigurator's published {_pct(AIC_VLLM_TTFT_MAPE)} (theirs fitted on the same file, not held out).")


def own_section(out: list[str], runs: Path) -> None:
    cat = load_catalog()
    out.append("\nown_engine on the H200: estimate against its served runs (llama-1b, bf16; random weights)\n")
    out.append("| run | in flight | TTFT p50 / mean measured | TTFT estimated | TPOT p50 / mean measured | TPOT estimated | req/s measured | req/s estimated | role |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for run_dir in sorted(runs.glob("*-own-*")):
        f = run_dir / "result.json"
        if not f.is_file():
            continue
        d = json.loads(f.read_text())
        s = d["summary"]
        if d["verdict"]["status"] != "VALID":
            continue
        cfg = {"model_type": "llama", **d["engine"]["extra"]["model_config"]}
        arch = from_config(cfg, "llama-1b", str(f))
        isl, osl = round(s["n_in_total"] / s["n_ok"]), round(s["n_out_total"] / s["n_ok"])
        in_flight = s["requests_per_s"] * (s["ttft_ms"]["mean"] + (osl - 1) * s["tpot_ms"]["mean"]) / 1000
        e = estimate(arch, resolve_gpu("h200", cat), 1, "own", precision("bf16"), isl, osl,
                     Load(rate=s["requests_per_s"]))
        role = "fitted the host constants" if "closed" in run_dir.name else "check (not fitted on)"
        out.append(f"| {run_dir.name} | {in_flight:.1f} | {s['ttft_ms']['p50']:.0f} / {s['ttft_ms']['mean']:.0f} | "
                   f"{e.ttft_ms:.0f} | {s['tpot_ms']['p50']:.1f} / {s['tpot_ms']['mean']:.1f} | {e.tpot_ms:.1f} | "
                   f"{s['requests_per_s']:.2f} | {e.requests_per_s:.2f} | {role} |")


def timing_section(out: list[str]) -> None:
    cat = load_catalog()
    arch, gpu, prec = load_architecture("Llama 3.3 70B"), resolve_gpu("h200", cat), precision("fp8")
    times = []
    for i in range(30):
        t0 = time.perf_counter()
        estimate(arch, gpu, 1, "vllm", prec, 1024 + i, 1024, Load(rate=1.0))
        times.append(time.perf_counter() - t0)
    out.append(f"\nOne estimate (70B fp8, H200, vLLM, at 1 req/s: a bisection over concurrency): median "
               f"{1000 * statistics.median(times):.0f} ms, max {1000 * max(times):.0f} ms (target < 1 s).")
    adv = [sys.executable, "-m", "advisor_cli"]
    empty = Path("/tmp/advisor-sizing-bench-empty")
    empty.mkdir(exist_ok=True)
    for model in ("Llama 3.1 8B", "Llama 3.3 70B"):
        t0 = time.perf_counter()
        r = subprocess.run([*adv, "estimate", "--model-config", model, "--hardware", "all", "--engine", "all",
                            "--precision", "fp8", "--isl", "1024", "--osl", "1024", "--rate", "20", "--json"],
                           capture_output=True, text=True)
        t_est = time.perf_counter() - t0
        rows = json.loads(r.stdout)["estimates"] if r.returncode == 0 else []
        unexplained = [x for x in rows if not x["ttft_ms"] and not x["why"]]
        t0 = time.perf_counter()
        r2 = subprocess.run([*adv, "recommend", "--model-config", model, "-s", "chat", "--peak-rps", "20",
                             "--runs", str(empty), "--json"], capture_output=True, text=True)
        t_rec = time.perf_counter() - t0
        out.append(f"- {model}: `advisor estimate --hardware all --engine all` {t_est:.1f} s, {len(rows)} rows "
                   f"(exit {r.returncode}; {len(unexplained)} without a figure or a reason); `advisor recommend "
                   f"--model-config` over the catalog {t_rec:.1f} s (exit {r2.returncode}; target < 10 s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=Path(__file__).resolve().parents[2] / "shared/gpu-runs/h200-2026-11-26")
    ap.add_argument("--md", type=Path, default=None)
    a = ap.parse_args()
    out: list[str] = []
    backtest_section(out)
    if a.runs.is_dir():
        own_section(out, a.runs)
    timing_section(out)
    text = "\n".join(out)
    print(text)
    if a.md:
        a.md.write_text(text + "\n")


if __name__ == "__main__":
    main()
