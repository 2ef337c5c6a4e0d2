"""own_engine against the naive baseline, Hugging Face `generate()` in static batches, at 1 and 64 users.

The seeds of this product say "PyTorch direct serving leaves 5-10x throughput
on the floor". This measures it: the `own` engine (continuous batching, paged
KV cache) and the `transformers` engine (adapters/transformers_hf.py: whatever
is waiting, left-padded, run by `generate()` to the batch's longest member)
serve the same closed-loop scenario through `advisor bench` (engine in its own
process, same model, same threads, same seed, the same requests), at each user
count, one run each, interleaved so machine noise hits both alike. A run is a
fixed amount of work: each user sends `--requests-per-user` requests (at least
`--min-requests` in all), so both engines do exactly the same requests. Reported per engine and
user count: output tok/s, req/s, median TTFT, TPOT, ITL and E2E; then own /
transformers for output tok/s and median E2E. One JSON document last.

    python benchmarks/baseline.py --model tiny
    python benchmarks/baseline.py --model small-100m --length-scale 0.5 --requests-per-user 2 --min-requests 40

The default scenario, benchmarks/data/baseline-closed.yaml, has no think time,
so every user always has a request in the engine: throughput at N users is the
engine's, not the users'. `--scenario chat-closed` runs a shipped one instead.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import adapters  # noqa: E402
from advisor.run.bench import BenchConfig, run_bench  # noqa: E402
from scenarios.schedule import Overrides  # noqa: E402

ENGINES = ("own", "transformers")
SCENARIO = Path(__file__).resolve().parent / "data" / "baseline-closed.yaml"


def row_of(engine: str, users: int, r) -> dict:
    """The figures of one run that the comparison uses."""
    s = r.summary
    return {"engine": engine, "users": users, "output_tokens_per_s": s.output_tokens_per_s,
            "requests_per_s": s.requests_per_s, "ttft_ms_p50": s.ttft_ms.at(50), "tpot_ms_p50": s.tpot_ms.at(50),
            "itl_ms_p50": s.itl_ms.at(50), "itl_ms_p99": s.itl_ms.at(99), "e2e_ms_p50": s.e2e_ms.at(50),
            "n_ok": s.n_ok, "n_errors": s.n_errors, "verdict": r.verdict.status,
            "engine_cpu_percent_mean": r.telemetry.cpu_percent_mean, "run": str(r.path)}


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--scenario", default=str(SCENARIO))
    ap.add_argument("--users", default="1,64")
    ap.add_argument("--length-scale", type=float, default=None, help="multiplies input and output lengths")
    ap.add_argument("--requests-per-user", type=int, default=4)
    ap.add_argument("--min-requests", type=int, default=100, help="at least this many requests per run")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--max-batch", type=int, default=64, help="most sequences per step/batch, the same for both")
    ap.add_argument("--out", default=None, help="runs folder (default: a temporary one)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="advisor-baseline-"))
    opts = {"device": args.device, "max_batch": args.max_batch, **({"threads": args.threads} if args.threads else {})}
    engines = {name: adapters.create(name, args.model, **opts) for name in ENGINES}
    rows: list[dict] = []
    try:
        infos = {name: a.start() for name, a in engines.items()}
        for users in (int(u) for u in args.users.split(",")):
            for name, adapter in engines.items():
                cfg = BenchConfig(scenario=args.scenario, engine=name, model=args.model, out_dir=out,
                                  engine_options=opts, overrides=Overrides(
                                      concurrency=users, seed=0, warmup_s=0.0, duration_s=3600.0,  # no time limit:
                                      length_scale=args.length_scale,
                                      max_requests=max(users * args.requests_per_user, args.min_requests)))  # work
                row = row_of(name, users, run_bench(cfg, adapter=adapter))
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        for a in engines.values():
            a.close()
    by = {(r["engine"], r["users"]): r for r in rows}
    ratios = [{"users": u, "output_tok_s_own_over_transformers":
               ratio(by[("own", u)]["output_tokens_per_s"], by[("transformers", u)]["output_tokens_per_s"]),
               "e2e_p50_transformers_over_own": ratio(by[("transformers", u)]["e2e_ms_p50"], by[("own", u)]["e2e_ms_p50"])}
              for u in sorted({r["users"] for r in rows})]
    for r in ratios:
        print(f"{r['users']:3d} users: own/transformers output tok/s {r['output_tok_s_own_over_transformers']}x, "
              f"median E2E transformers/own {r['e2e_p50_transformers_over_own']}x", file=sys.stderr)
    print(json.dumps({"benchmark": "baseline", "date_utc": time.strftime("%Y-%m-%d", time.gmtime()),
                      "model": args.model, "scenario": args.scenario, "machine": platform.processor() or platform.machine(),
                      "engines": {n: {"version": i.version, "device": i.device, "precision": i.precision,
                                      "threads": i.threads, "batching": i.batching} for n, i in infos.items()},
                      "settings": vars(args), "rows": rows, "ratios": ratios}, indent=2))


if __name__ == "__main__":
    main()
