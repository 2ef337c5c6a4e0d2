"""How long one simulated kernel launch takes when torch has 2 threads and the other CPU is busy.

    python benchmarks/sim_launch.py

The simulated device (own_engine.core.sim_device) issues its launches as real PyTorch ops sized to take about
5 us. An element-wise op of that size is split over torch's thread pool, so with another CPU busy a launch can
wait for it; `launch_op` (a cumulative sum, serial) stays on the calling thread. For each op, at torch's thread
count 2, 20,000 calls are timed with the other CPUs idle and then with a busy-looping process beside it;
percentiles in us. Needs at least 2 CPUs. One JSON document goes to stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def times_us(fn, reps: int = 20000) -> dict:  # noqa: ANN001
    for _ in range(200):
        fn()
    ts = np.empty(reps)
    for i in range(reps):
        t = time.perf_counter()
        fn()
        ts[i] = time.perf_counter() - t
    ts *= 1e6
    return {"p50": round(float(np.percentile(ts, 50)), 1), "p99": round(float(np.percentile(ts, 99)), 1),
            "p99_9": round(float(np.percentile(ts, 99.9)), 1), "max": round(float(ts.max()), 1)}


def main() -> None:
    from own_engine.core.sim_runner import _launch_tensors, launch_op

    if (os.cpu_count() or 1) < 2:
        raise SystemExit("needs at least 2 CPUs")
    torch.set_num_threads(2)
    a, out = _launch_tensors(5.0)
    b, b_out = torch.ones(131072), torch.empty(131072)  # the size the element-wise op needed for 5 us here
    ops = {f"launch_op (cumsum, {a.numel()} elements)": lambda: launch_op(a, out),
           "torch.add (131072 elements, the op before)": lambda: torch.add(b, b, out=b_out)}
    rows = []
    for busy in (False, True):
        spin = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
        try:
            time.sleep(0.3)
            for name, fn in ops.items():
                r = {"op": name, "other_cpu_busy": busy, **times_us(fn)}
                rows.append(r)
                print(r, file=sys.stderr)
        finally:
            if spin is not None:
                spin.kill()
                spin.wait()
    print(json.dumps({"started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "rows": rows}))


if __name__ == "__main__":
    main()
