"""Does the default run's verdict hold still? `advisor bench --scenario copilot`, many times in a row.

Runs the README's first command (own_engine, the tiny model, this CPU) N times as
real `advisor` processes, then the same with the engine on the client's
interpreter (`--opt isolate=false`, the layout before the engine got a process
of its own) as the baseline, and prints per run the verdict and the send lag,
then one JSON document with the counts and medians.

    python benchmarks/verdict_stability.py --n 20 --n-baseline 10

Run it on a quiet machine: any other CPU load shows up as send lag.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one(out: Path, extra: list[str]) -> dict:
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-c", "from advisor_cli import main; main()", "bench", "--scenario",
                          "copilot", "--out", str(out), "--json", *extra], capture_output=True, text=True,
                         env={**os.environ, "ADVISOR_EXIT_ZERO": "1"})  # INVALID is a verdict to count, not an error
    if res.returncode != 0:
        return {"status": "ERROR", "error": res.stderr.strip()[-300:]}
    d = json.loads(res.stdout)
    lag, check = d["summary"]["client_queue_ms"], d["summary"].get("lag_check") or {}
    return {"status": d["verdict"]["status"], "reasons": d["verdict"]["reasons"], "n": d["summary"]["n_ok"],
            "lag_p50_ms": lag["p50"], "lag_p99_ms": lag["p99"], "lag_max_ms": lag["max"],
            "lag_limit_ms": check.get("limit_ms"), "late": check.get("n_late"), "critical": check.get("critical"),
            "ttft_p50_ms": d["summary"]["ttft_ms"]["p50"], "placement": d["engine"].get("placement", {}).get("note"),
            "wall_s": round(time.monotonic() - t0, 1),
            "loadavg_1m_after": round(os.getloadavg()[0], 2)}  # other work on the machine shows up here


def series(name: str, n: int, extra: list[str], out: Path) -> dict:
    rows = []
    for i in range(n):
        r = one(out, extra)
        rows.append(r)
        print(f"{name} {i + 1:2d}/{n}: {r['status']:9s} lag p50 {r.get('lag_p50_ms')} p99 {r.get('lag_p99_ms')} "
              f"max {r.get('lag_max_ms')} ms, late {r.get('late')}/{r.get('n')} (fails at {r.get('critical')}), "
              f"limit {r.get('lag_limit_ms')} ms, load {r.get('loadavg_1m_after')}", file=sys.stderr, flush=True)
    p99 = [r["lag_p99_ms"] for r in rows if r.get("lag_p99_ms") is not None]
    return {"runs": n, "valid": sum(r["status"] == "VALID" for r in rows),
            "statuses": {s: sum(r["status"] == s for r in rows) for s in {r["status"] for r in rows}},
            "lag_p99_ms_median": statistics.median(p99) if p99 else None,
            "lag_p99_ms_max": max(p99) if p99 else None,
            "ttft_p50_ms_median": statistics.median(t) if (t := [r["ttft_p50_ms"] for r in rows
                                                                 if r.get("ttft_p50_ms")]) else None,
            "rows": rows}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20, help="runs with the engine in its own process (the default)")
    p.add_argument("--n-baseline", type=int, default=10, help="runs with the engine on the client's interpreter")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="advisor-verdicts-") as tmp:
        out = Path(tmp)
        one(out, [])  # the model is created and cached before anything is timed
        isolated = series("own process", args.n, [], out)
        baseline = series("same interpreter", args.n_baseline, ["--opt", "isolate=false"], out)
    print(json.dumps({"command": "advisor bench --scenario copilot", "isolated": isolated,
                      "same_interpreter": baseline}))


if __name__ == "__main__":
    main()
