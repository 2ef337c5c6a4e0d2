"""How many embed requests a second does advisor's embed load generator hold on one core, against a zero-work server?

The server (`benchmarks/zero_embed_server.py`, uvloop) runs in its own process pinned to the last CPU;
the client (`advisor.embed`: the openai-embed adapter and the open-loop driver, one 12-word corpus chunk
per request, as `embed-query` sends) is this process, pinned to CPU 0. At each constant rate, for
--seconds, it reports achieved requests/s, the send lag (p50, p99, sends later than 5 ms) and the
client's CPU seconds per request (process time over the run): requests/s per core = 1 / that. A rate is
held when the run is VALID (at most 1% of sends later than the lag limit), error-free, and achieved
>= 95% of it. Every rate is run (a shared machine's blip at one rate ends no ladder). One JSON line per
rate, the summary last.

    python benchmarks/embed_loadgen.py --rates 250,500,1000,1500,2000 --seconds 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters import embedders  # noqa: E402
from advisor.embed.drive import drive  # noqa: E402
from advisor.embed.metrics import summarise  # noqa: E402
from advisor.loadgen import eventloop  # noqa: E402
from scenarios.embed_schedule import build_embed_schedule, load_embed_scenario  # noqa: E402

SCENARIO = """name: zero-embed
description: one 12-word corpus chunk per request at a constant rate, for the load generator's ceiling
workload: {{task: embed, embed: {{inputs_per_request: 1, chunk_words: 12}}}}
arrival: {{process: constant, rate_rps: {rate}}}
duration_s: {seconds}
warmup_s: 0.5
slos: {{e2e_ms: 50, percentile: 95}}
"""


def one_rate(url: str, rate: float, seconds: float, folder: Path) -> dict[str, object]:
    path = folder / f"zero-{rate:g}.yaml"
    path.write_text(SCENARIO.format(rate=rate, seconds=seconds))
    schedule = build_embed_schedule(load_embed_scenario(str(path)))
    adapter = embedders.create("openai-embed", "zero", {"url": url})
    adapter.start()
    cpu0 = time.process_time()
    records = eventloop.run(drive(adapter, schedule))
    cpu_s = time.process_time() - cpu0
    adapter.close()
    s = summarise(schedule, records)
    held = s.verdict == "VALID" and not s.errors_by_kind and s.requests_per_s >= 0.95 * rate
    return {"rate_rps": rate, "achieved_rps": round(s.requests_per_s, 1), "verdict": s.verdict, "held": held,
            "send_lag_p50_ms": s.send_lag_ms.p50, "send_lag_p99_ms": s.send_lag_ms.p99, "late_sends": s.late_sends,
            "n": len(records), "errors": s.errors_by_kind, "latency_p50_ms": s.latency_ms.p50,
            "client_cpu_ms_per_request": round(cpu_s / len(records) * 1e3, 4),
            "requests_per_core_s": round(len(records) / cpu_s, 0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="250,500,1000,1500,2000")
    ap.add_argument("--seconds", type=float, default=5.0)
    a = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    server = subprocess.Popen(["taskset", "-c", str(cpus[-1]), sys.executable, str(ROOT / "benchmarks/zero_embed_server.py"),
                               "--uvloop"], stdout=subprocess.PIPE, text=True)
    os.sched_setaffinity(0, {cpus[0]})
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}"
        rows = []
        with tempfile.TemporaryDirectory() as d:
            for rate in (float(r) for r in a.rates.split(",")):
                row = one_rate(url, rate, a.seconds, Path(d))
                rows.append(row)
                print(json.dumps(row), flush=True)  # every rate runs: one blip of a shared machine ends no ladder
    finally:
        server.terminate()
        server.wait()
    held = [r["rate_rps"] for r in rows if r["held"]]
    print(json.dumps({"summary": {"highest_held_rps": max(held) if held else None, "event_loop": eventloop.name(),
                                  "loadavg": os.getloadavg(), "cpus": len(cpus)}}))


if __name__ == "__main__":
    main()
