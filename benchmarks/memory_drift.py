"""How steady is this machine's memory read speed over seconds? (issue 12 part 4: the slow batch-1 cells)

    python benchmarks/memory_drift.py --processes 4 --seconds 12

Batch-1 decode reads every weight once per token, so its speed is this machine's memory read speed. This
script measures that speed alone, with no engine: each of --processes fresh processes (one after another)
allocates --mb of fp32 and, for --seconds, sums the whole tensor over and over on --threads threads; each
second it records the median time of one pass in that second, as GB/s. A machine whose read speed is steady
shows one level in every second of every process; phases of several seconds at a lower level, in some
processes and not others, are the machine's, not an engine's. Prints one line per process and one JSON
document (every second's figure; the fastest and slowest seconds over all processes, and their ratio).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

ONE = """
import json, statistics, time, torch
torch.set_num_threads({threads})
x = torch.ones({floats})
x.sum()
out = []
for _ in range({seconds}):
    t0, passes = time.perf_counter(), []
    while time.perf_counter() - t0 < 1.0:
        a = time.perf_counter(); x.sum(); passes.append(time.perf_counter() - a)
    out.append({bytes} / statistics.median(passes) / 1e9)
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mb", type=int, default=352, help="bytes read per pass (small-100m's weights: 351 MB)")
    args = ap.parse_args()
    floats = args.mb * 1_000_000 // 4
    code = ONE.format(threads=args.threads, floats=floats, seconds=args.seconds, bytes=floats * 4)
    runs = []
    for i in range(args.processes):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        gbs = json.loads(out.stdout)
        runs.append(gbs)
        print(f"process {i}: " + " ".join(f"{g:.0f}" for g in gbs) + " GB/s", flush=True)
    flat = [g for r in runs for g in r]
    print(json.dumps({"threads": args.threads, "mb": args.mb, "seconds": args.seconds, "gb_s": runs,
                      "fastest_s": max(flat), "slowest_s": min(flat), "median_s": statistics.median(flat),
                      "fastest_over_slowest": max(flat) / min(flat)}, indent=1))


if __name__ == "__main__":
    main()
