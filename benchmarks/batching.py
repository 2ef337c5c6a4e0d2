"""Continuous vs static batching on the `bursty` scenario, measured in one run.

For each request rate, `own` (continuous batching, paged KV) and `own-static`
(plain-PyTorch-style static batches) run the same schedule, interleaved so
machine noise hits both alike. Reported per rate and engine: output tokens/s,
p95 E2E, p95 TTFT, verdict. Then the throughput each reaches at equal p95
latency (linear interpolation of output tokens/s at a p95 E2E target) and the
ratio continuous / static. One JSON document last.

    python benchmarks/batching.py --model small-100m --rates 0.5,1,2,3 --duration 40
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import adapters  # noqa: E402
from advisor.run.bench import BenchConfig, run_bench  # noqa: E402
from scenarios.schedule import Overrides  # noqa: E402

ENGINES = ("own", "own-static")


def at_latency(points: list[tuple[float, float]], target_ms: float) -> float | None:
    """Throughput where p95 latency reaches target: points are (tokens/s, p95 ms) by rising rate."""
    best = None
    for (t0, l0), (t1, l1) in zip(points, points[1:]):
        if l0 <= target_ms <= l1 and l1 > l0:
            return t0 + (t1 - t0) * (target_ms - l0) / (l1 - l0)
    for t, lat in points:
        if lat <= target_ms:
            best = t if best is None else max(best, t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--scenario", default="bursty")
    ap.add_argument("--rates", default="0.5,1,2,3")
    ap.add_argument("--duration", type=float, default=40.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--max-batch", type=int, default=16, help="max sequences per batch, same for both engines")
    ap.add_argument("--latency-ms", type=float, default=None,
                    help="p95 E2E target for the equal-latency comparison; default: static's p95 at the lowest rate x 2")
    ap.add_argument("--out", default=None, help="runs folder (default: a temporary one)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="advisor-batching-"))
    opts = {"threads": args.threads} if args.threads else {}
    engines = {
        "own": adapters.create("own", args.model, max_batch=args.max_batch, **opts),
        "own-static": adapters.create("own-static", args.model, max_batch=args.max_batch, **opts),
    }
    for a in engines.values():
        a.start()
    rows: list[dict] = []
    for rate in [float(r) for r in args.rates.split(",")]:
        for name, adapter in engines.items():
            cfg = BenchConfig(scenario=args.scenario, engine=name, model=args.model, out_dir=out,
                              overrides=Overrides(rate_rps=rate, duration_s=args.duration, warmup_s=args.warmup))
            r = run_bench(cfg, adapter=adapter)
            s = r.summary
            row = {"engine": name, "rate_rps": rate, "output_tokens_per_s": s.output_tokens_per_s,
                   "requests_per_s": s.requests_per_s, "p95_e2e_ms": s.e2e_ms.at(95),
                   "p95_ttft_ms": s.ttft_ms.at(95), "p95_tpot_ms": s.tpot_ms.at(95),
                   "n": s.n_requests, "verdict": r.verdict.status, "run": str(r.path)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    for a in engines.values():
        a.close()
    static = [(r["output_tokens_per_s"], r["p95_e2e_ms"]) for r in rows if r["engine"] == "own-static" and r["p95_e2e_ms"]]
    cont = [(r["output_tokens_per_s"], r["p95_e2e_ms"]) for r in rows if r["engine"] == "own" and r["p95_e2e_ms"]]
    target = args.latency_ms or (2 * static[0][1] if static else None)
    t_static = at_latency(static, target) if target else None
    t_cont = at_latency(cont, target) if target else None
    print(json.dumps({"scenario": args.scenario, "model": args.model, "max_batch": args.max_batch,
                      "p95_e2e_target_ms": target, "continuous_tokens_per_s_at_target": t_cont,
                      "static_tokens_per_s_at_target": t_static,
                      "ratio": (t_cont / t_static) if t_cont and t_static else None, "rows": rows}))


if __name__ == "__main__":
    main()
