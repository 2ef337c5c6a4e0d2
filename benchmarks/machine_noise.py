"""How much time does this machine take from the load generator's CPU, with the engine's CPU idle and busy?

    python benchmarks/machine_noise.py                     # client CPU = the first, engine CPU = the last
    python benchmarks/machine_noise.py --seconds 10 --client-cpu 0 --engine-cpu 1 [--json]

advisor pins the client to its own CPU and the engine to the others (adapters/placement.py). Whatever else the
machine runs (kernel threads, agents, other tenants) then lands on the client's CPU whenever the engine holds
its own, and a send due at that moment goes out late. This measures that directly, with no engine and no
advisor code in the way, in two phases of `--seconds` each:

- a timing loop pinned to the client's CPU reads the clock back to back; every gap over 1 ms is time the
  loop did not run. Its thread's run-queue wait (/proc/thread-self/schedstat, field 2) says how much of that
  it spent runnable behind another task on the same CPU (the rest is time the whole virtual CPU did not run,
  or the loop's own page faults);
- phase "engine idle": nothing else is started; phase "engine busy": a spinning process pinned to the
  engine's CPU stands in for an engine at work;
- in each phase, the tasks (every thread on the machine) that used the most CPU, from /proc/*/task/*/schedstat.

The timing loop itself never sleeps, so it is a worst case for a client that sleeps between sends (another
task can only get its CPU at a tick or when it wakes): the figures bound the machine's share, they are not the
late-send count of a run. Linux only.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

GAP_NS = 1_000_000  # a clock gap over this is time the loop did not run


def _task_cpu_ns() -> dict[tuple[str, str], tuple[str, int]]:
    """Every thread on the machine: (pid, tid) -> (name, CPU time so far in ns)."""
    out: dict[tuple[str, str], tuple[str, int]] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                run = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
                name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            except (OSError, ValueError, IndexError):
                continue
            out[(pid, tid)] = (name, run)
    return out


def _spin(cpu: int, until: float) -> None:
    os.sched_setaffinity(0, {cpu})
    while time.monotonic() < until:
        pass


def _schedstat() -> tuple[int, int]:
    on_cpu, runq = Path("/proc/thread-self/schedstat").read_text().split()[:2]
    return int(on_cpu), int(runq)


def timing_loop(cpu: int, seconds: float) -> dict:
    """Read the clock back to back on `cpu` for `seconds`: the gaps, and the thread's run-queue wait."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        gaps: list[float] = []
        s0 = _schedstat()
        now = prev = time.perf_counter_ns()
        end = now + int(seconds * 1e9)
        while now < end:
            now = time.perf_counter_ns()
            if now - prev > GAP_NS:
                gaps.append((now - prev) / 1e6)
            prev = now
        s1 = _schedstat()
    finally:
        os.sched_setaffinity(0, before)
    gaps.sort()
    return {"seconds": seconds, "gaps_over_1ms": len(gaps), "gaps_over_2ms": sum(g > 2 for g in gaps),
            "gaps_over_5ms": sum(g > 5 for g in gaps), "gap_max_ms": round(gaps[-1], 2) if gaps else 0.0,
            "gap_total_ms": round(sum(gaps), 1), "runq_wait_ms": round((s1[1] - s0[1]) / 1e6, 1)}


def phase(name: str, client_cpu: int, engine_cpu: int | None, seconds: float, top: int) -> dict:
    spinner = None
    if engine_cpu is not None:
        spinner = mp.get_context("fork").Process(target=_spin, args=(engine_cpu, time.monotonic() + seconds + 2),
                                                 daemon=True)
        spinner.start()
        time.sleep(0.3)  # the spinner is running before the loop starts
    me = str(os.getpid())
    skip = {me} | ({str(spinner.pid)} if spinner is not None else set())
    a = _task_cpu_ns()
    loop = timing_loop(client_cpu, seconds)
    b = _task_cpu_ns()
    spinner_ms = None
    if spinner is not None:
        spinner_ms = round(sum(v[1] - a.get(k, (v[0], 0))[1] for k, v in b.items() if k[0] == str(spinner.pid)) / 1e6, 1)
        spinner.terminate()
        spinner.join()
    used = sorted(((b[k][1] - a.get(k, (b[k][0], 0))[1]) / 1e6, b[k][0], k[0]) for k in b if k[0] not in skip)
    others = [{"task": n, "pid": int(p), "cpu_ms": round(ms, 1)} for ms, n, p in reversed(used[-top:]) if ms >= 0.1]
    return {"phase": name, "client_cpu": client_cpu, "engine_cpu": engine_cpu, "engine_spinner_cpu_ms": spinner_ms,
            **loop, "other_tasks": others,
            "other_tasks_cpu_ms": round(sum(ms for ms, _, _ in used), 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each phase (default 10)")
    ap.add_argument("--client-cpu", type=int, default=cpus[0] if cpus else 0)
    ap.add_argument("--engine-cpu", type=int, default=cpus[-1] if cpus else 0)
    ap.add_argument("--top", type=int, default=6, help="other tasks to list per phase (default 6)")
    ap.add_argument("--json", action="store_true", help="one JSON document, nothing else")
    args = ap.parse_args(argv)
    if not Path("/proc/thread-self/schedstat").exists():
        print("machine_noise.py needs Linux with /proc/thread-self/schedstat", file=sys.stderr)
        return 2
    for c in (args.client_cpu, args.engine_cpu):
        if c not in cpus:
            print(f"CPU {c} is not one this process may use ({cpus}): pick --client-cpu/--engine-cpu from those",
                  file=sys.stderr)
            return 2
    if args.seconds <= 0:
        print("--seconds must be > 0", file=sys.stderr)
        return 2
    busy = args.engine_cpu if args.engine_cpu != args.client_cpu else None
    phases = [phase("engine idle", args.client_cpu, None, args.seconds, args.top)]
    if busy is not None:
        phases.append(phase("engine busy", args.client_cpu, busy, args.seconds, args.top))
    doc = {"machine": os.uname().nodename, "kernel": os.uname().release, "cpus": cpus,
           "at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "phases": phases}
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(f"machine noise on CPU {args.client_cpu} (the client's), {args.seconds:g} s per phase, {doc['at']}")
    for p in phases:
        print(f"  {p['phase']:12s} gaps >1 ms {p['gaps_over_1ms']:4d}  >2 ms {p['gaps_over_2ms']:4d}  "
              f">5 ms {p['gaps_over_5ms']:4d}  max {p['gap_max_ms']:6.2f} ms  lost {p['gap_total_ms']:7.1f} ms  "
              f"run-queue wait {p['runq_wait_ms']:7.1f} ms")
        for t in p["other_tasks"]:
            print(f"      {t['cpu_ms']:8.1f} ms  {t['task']} (pid {t['pid']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
