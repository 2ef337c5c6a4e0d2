"""Do this machine's CPUs slow each other down? Work on one CPU, with the other idle and then busy.

    python benchmarks/cpu_siblings.py                 # CPU 1 measured, CPU 0 idle then spinning, 3 rounds
    python benchmarks/cpu_siblings.py --measure 0 --load 1

A served run puts the engine on one CPU and the load generator on another (adapters.placement); the engine's
offline core runs with that other CPU idle. If the two CPUs share a physical core (hyperthreads the VM does not
show: lscpu can say "1 thread per core") or the host is oversubscribed, a busy neighbour slows the engine's host
work, and served/core ratios measured on the machine carry that slowdown. Measured on `--measure`: a pure-Python
loop (2M additions) and 3,000 `torch.tensor` calls on an 8 x 24 nested list (what own_engine's input
preparation does), with `--load` idle, then with a process spinning in Python on `--load`. One JSON document.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time


def _spin(cpu: int, stop: mp.synchronize.Event) -> None:  # type: ignore[name-defined]
    os.sched_setaffinity(0, {cpu})
    x = 0
    while not stop.is_set():
        for _ in range(10_000):
            x += 1


def _work() -> tuple[float, float]:
    import torch

    t = time.perf_counter()
    s = 0
    for i in range(2_000_000):
        s += i
    loop_s = time.perf_counter() - t
    rows = [[i for i in range(24)] for _ in range(8)]
    t = time.perf_counter()
    for _ in range(3000):
        torch.tensor(rows)
    return loop_s, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measure", type=int, default=1, help="the CPU whose work is timed")
    ap.add_argument("--load", type=int, default=0, help="the CPU that is idle, then busy")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.sched_setaffinity(0, {args.measure})
    rows = []
    for _ in range(args.rounds):
        idle = _work()
        stop = mp.Event()
        p = mp.Process(target=_spin, args=(args.load, stop))
        p.start()
        time.sleep(0.2)
        busy = _work()
        stop.set()
        p.join()
        rows.append({"loop_idle_ms": idle[0] * 1e3, "loop_busy_ms": busy[0] * 1e3,
                     "tensor_idle_ms": idle[1] * 1e3, "tensor_busy_ms": busy[1] * 1e3})
    out = {"measure_cpu": args.measure, "load_cpu": args.load, "loadavg": os.getloadavg(), "rounds": rows,
           "loop_slowdown_median": statistics.median(r["loop_busy_ms"] / r["loop_idle_ms"] for r in rows),
           "tensor_slowdown_median": statistics.median(r["tensor_busy_ms"] / r["tensor_idle_ms"] for r in rows)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
