"""How fast is the load generator itself? Zero-work engines at rising request rates.

For each target rate, a constant-rate open-loop schedule runs for --seconds
against a zero-work engine: in-process (the `fake` adapter, no delays) or a
zero-work HTTP server (`--url`, e.g. ../shared/bench/zero-sse, through the
`openai` adapter). Reported per rate: achieved rate, send lag p50/p99
(t_send - t_sched, the first second excluded while connection pools fill) and
client CPU per request and per streamed chunk (it includes the sub-ms spin-wait
before each send, so it falls as the rate rises). The
summary gives the highest rate held (>= 95% of target) with lag p99 under 1 ms
and under 5 ms. Pin it to one core for comparable figures:

    taskset -c 0 python benchmarks/loadgen.py --rates 500,1000,2000,4000
    taskset -c 0 python benchmarks/loadgen.py --url http://127.0.0.1:18080 --rates 250,500,1000,2000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time

import numpy as np

import adapters
from adapters.base import RequestSpec
from advisor.loadgen import drive
from scenarios.types import Schedule, ScheduledRequest, SLOs


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def one_rate(adapter, rate: float, seconds: float, chunks: int) -> dict:
    n = int(rate * seconds)
    reqs = tuple(ScheduledRequest(idx=i, t_sched_s=i / rate, n_in=8, n_out=chunks) for i in range(n))
    sched = Schedule(scenario="loadgen", mode="open", requests=reqs, seed=0, slos=SLOs(), duration_s=seconds)
    specs = [RequestSpec(f"r{i}", tuple(range(3, 11)), max_tokens=chunks, min_tokens=chunks) for i in range(n)]
    async def run():
        try:
            return await drive(adapter, sched, specs, timeout_s=30)
        finally:
            if hasattr(adapter, "aclose"):
                await adapter.aclose()

    cpu0, t0 = _cpu_s(), time.perf_counter()
    res = asyncio.run(run())
    cpu, wall = _cpu_s() - cpu0, time.perf_counter() - t0
    ok = [r for r in res.records if r.ok]
    # lag over the whole run, first second excluded (connection pool and caches filling up)
    lag_ms = np.array([(r.t_send_ns - r.t_sched_ns) / 1e6 for r in res.records
                       if r.t_send_ns is not None and r.t_sched_ns >= 1e9])
    errors: dict[str, int] = {}
    for r in res.records:
        if r.error_kind:
            errors[r.error_kind] = errors.get(r.error_kind, 0) + 1
    n_chunks = sum(len(r.chunk_t_ns) for r in ok)
    last_done = max((r.t_last_ns for r in ok if r.t_last_ns is not None), default=0) / 1e9
    achieved = len(ok) / max(last_done, seconds)
    return {"target_rps": rate, "achieved_rps": round(achieved, 1), "ok": len(ok), "errors": n - len(ok),
            "errors_by_kind": errors,
            "lag_p50_ms": round(float(np.percentile(lag_ms, 50)), 3), "lag_p99_ms": round(float(np.percentile(lag_ms, 99)), 3),
            "cpu_us_per_request": round(cpu / max(1, len(ok)) * 1e6, 1),
            "cpu_us_per_chunk": round(cpu / max(1, n_chunks) * 1e6, 2), "wall_s": round(wall, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="250,500,1000,2000,4000", help="comma-separated target req/s")
    ap.add_argument("--seconds", type=float, default=15.0, help="run length per rate (>= 15 s hides no overload)")
    ap.add_argument("--chunks", type=int, default=16, help="streamed one-token chunks per request")
    ap.add_argument("--url", default=None, help="zero-work OpenAI-compatible server; default: in-process fake engine")
    args = ap.parse_args()
    if args.url:
        adapter = adapters.create("openai", "zero", url=args.url)
    else:
        adapter = adapters.create("fake")
    info = adapter.start()
    rows = []
    for rate in [float(r) for r in args.rates.split(",")]:
        row = one_rate(adapter, rate, args.seconds, args.chunks)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if row["achieved_rps"] < 0.5 * rate:
            break  # far past what the client can do: higher rates only take longer
    adapter.close()

    def best(limit_ms: float) -> float | None:
        held = [r["target_rps"] for r in rows if r["achieved_rps"] >= 0.95 * r["target_rps"]
                and r["lag_p99_ms"] < limit_ms and r["errors"] == 0]
        return max(held) if held else None

    print(json.dumps({"engine": info.adapter, "url": args.url, "chunks_per_request": args.chunks,
                      "seconds_per_rate": args.seconds, "max_rps_lag_p99_under_1ms": best(1.0),
                      "max_rps_lag_p99_under_5ms": best(5.0), "rows": rows}))


if __name__ == "__main__":
    main()
