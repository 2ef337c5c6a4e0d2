"""Does own_engine served keep up with its own core? The same requests offline and through `advisor bench`.

    python benchmarks/serving_overhead.py --device sim:h200 --model tiny --concurrency 1,8,64
    python benchmarks/serving_overhead.py --device cpu --model tiny --concurrency 1,8,64 --prompt-len 64 --output-len 64
    python benchmarks/serving_overhead.py --device cpu --model small-100m --concurrency 1,8 --prompt-len 64 --output-len 32

For each concurrency C, in one run:

- `served`: `advisor bench --engine own` (the engine in its own process, the load generator included) on a
  closed-loop scenario written here: C users, no think time, every request `--prompt-len` tokens in and exactly
  `--output-len` out (EOS ignored), `--warmup` s then `--duration` s measured; its output tok/s is the run's
  `summary.output_tokens_per_s` (the measured window only);
- `core`: `LLMEngine.step()` in a loop in one process (no front, no process boundary, no client) with
  `max_num_seqs=C` and the same threads and CPUs the served engine was given, on requests of the same lengths,
  kept at C in flight (a finished one is replaced at once, as a closed-loop user with no think time does);
  warm-up steps, then output tokens over `--duration` s of wall time.

ratio = served / core output tok/s (with `--core-twice`, the core runs before and after the served run and
the ratio uses the mean of the two). The load generator's CPU share is printed with the served row: on a machine
whose CPUs slow each other (benchmarks/cpu_siblings.py), a busy client slows the served engine's host work,
which the core, run with the client's CPU idle, never pays. The served run's step breakdown (own_engine.core.step_clock, from result.json's
engine statistics) is printed with it: where the engine's step time went. One JSON document goes to stdout.
On a simulated device (`sim:...`) the forward sleeps (own_engine.core.sim_device), so every figure is the host's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCENARIO = """name: serving-overhead
description: C users with no think time sending fixed-length requests (benchmarks/serving_overhead.py).
source: Synthetic.
workload: {{input: {{dist: fixed, value: {p}}}, output: {{dist: fixed, value: {o}}}}}
arrival: {{process: closed, concurrency: {c}, think_s: 0, think_cv: 0, requests_per_user: {r}}}
duration_s: {d}
warmup_s: {w}
slos: {{}}
"""


def served(args: argparse.Namespace, c: int, work: Path, core_tok_s: float) -> dict:
    """One `advisor bench` run; its result.json's throughput, engine placement and step breakdown.

    A closed loop sends a number of requests, not a time: each user sends as many as the core would finish in
    warm-up + duration (so at the core's speed the run lasts that long; a slower served path just takes longer).
    """
    scen = work / f"scenario-{c}.yaml"
    per_user = max(2, round((args.warmup + args.duration) * core_tok_s / (c * args.output_len)))
    scen.write_text(SCENARIO.format(p=args.prompt_len, o=args.output_len, c=c, d=args.duration, w=args.warmup,
                                    r=per_user))
    poll = (f"from benchmarks.busy_poll import install; install({args.client_poll_us}); "
            if args.client_poll_us else "")
    cmd = [sys.executable, "-c", f"import sys; {poll}from advisor_cli import main; sys.argv[0] = 'advisor'; main()",
           "bench", "--engine", "own", "--device", args.device, "--model", args.model, "--scenario", str(scen),
           "--out", str(work / "runs"), "--json", "--opt", f"max_batch={c}"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    for opt in args.opt:
        cmd += ["--opt", opt]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
           "ADVISOR_EXIT_ZERO": "1"}  # an INVALID run (too few requests for a p95 at C=1) still has its throughput
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.duration * 10 + 300)
    if proc.returncode != 0:
        raise SystemExit(f"advisor bench failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    doc = json.loads(proc.stdout)
    s, eng = doc["summary"], doc["engine"]
    stats = {k.removeprefix("engine_").removesuffix("_peak"): v for k, v in doc["telemetry"]["engine_stats"].items()}
    return {"output_tok_s": s["output_tokens_per_s"], "requests_per_s": s["requests_per_s"], "n_ok": s["n_ok"],
            "verdict": doc["verdict"]["status"], "verdict_reasons": doc["verdict"]["reasons"], "run_id": doc["run_id"], "tpot_p50_ms": s["tpot_ms"]["p50"],
            "itl_p99_ms": s["itl_ms"]["p99"], "ttft_p95_ms": s["ttft_ms"]["p95"],
            "engine_threads": eng["threads"], "engine_cpus": eng["placement"].get("engine_cpus"),
            "engine_cpu_percent": doc["telemetry"].get("cpu_percent_mean"), "client_cpu_share": client_cpu_share(doc),
            "event_loop": (doc.get("loadgen") or {}).get("event_loop"),
            "step": step_breakdown(stats)}


def client_cpu_share(doc: dict) -> float | None:
    """The load generator's CPU time over its wall time: how busy the engine's neighbour CPU was (on a machine
    whose CPUs slow each other, benchmarks/cpu_siblings.py, that busyness slows the served engine too)."""
    ws = (doc.get("loadgen") or {}).get("workers") or []
    cpu, wall = sum(w.get("cpu_s") or 0 for w in ws), max((w.get("wall_s") or 0 for w in ws), default=0)
    return round(cpu / wall, 3) if wall else None


def step_breakdown(stats: dict) -> dict:
    """Mean ms per step of each part (own_engine.core.step_clock) and the share of step wall time off the CPU."""
    n = stats.get("timed_steps") or 0
    if not n:
        return {}
    out = {f"{k}_ms": round(stats[f"step_{k}_s"] / n * 1e3, 4)
           for k in ("host_before", "forward", "forward_overrun", "sample_output", "handoff", "wall")}
    out["off_cpu_share"] = round(stats["step_off_cpu_s"] / stats["step_wall_s"], 4) if stats["step_wall_s"] else None
    out["steps"] = int(n)
    return out


def core(args: argparse.Namespace, c: int, threads: int | None, cpus: list[int] | None) -> dict:
    """The engine alone, C requests kept in flight, in a child process pinned like the served engine."""
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.serving_overhead import core_child; "
            "print(json.dumps(core_child(*json.loads(sys.argv[1]))))")
    spec = [args.device, args.model, c, threads, cpus, args.prompt_len, args.output_len, args.duration,
            dict(kv.split("=", 1) for kv in args.opt)]
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], capture_output=True, text=True,
                          timeout=args.duration * 4 + 300)
    if proc.returncode != 0:
        raise SystemExit(f"core run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def core_child(device: str, model: str, c: int, threads: int | None, cpus: list[int] | None, prompt_len: int,
               output_len: int, duration_s: float, opts: dict) -> dict:
    if cpus:
        os.sched_setaffinity(0, set(cpus))
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams

    kw: dict = {k: int(v) for k, v in opts.items() if k in ("max_num_batched_tokens", "block_size")}
    if "overlap" in opts:
        kw["overlap"] = opts["overlap"].lower() in ("1", "true", "yes", "on")
    for key in ("decode_attention", "linear_kernels"):
        if key in opts:
            kw[key] = opts[key]
    engine = LLMEngine(EngineConfig(model, device=device, threads=threads, max_num_seqs=c, **kw))
    rng = random.Random(0)
    vocab = engine.config.vocab_size
    params = SamplingParams(max_tokens=output_len, min_tokens=output_len, ignore_eos=True)

    def add() -> None:
        engine.add_request([rng.randrange(3, vocab) for _ in range(prompt_len)], params)

    for _ in range(c):
        add()
    tokens, t_end, t0 = 0, None, None
    warm_steps = 0
    while True:
        outs = engine.step()
        for _, ids, finished in outs:
            if t0 is not None:
                tokens += len(ids)
            if finished:
                add()
        if t0 is None:
            warm_steps += 1
            if warm_steps >= 2 * output_len:  # past the first wave's prefills: steady state
                t0 = time.perf_counter()
                t_end = t0 + duration_s
        elif time.perf_counter() >= t_end:
            break
    wall = time.perf_counter() - t0
    return {"output_tok_s": tokens / wall, "threads": engine.num_threads, "step": step_breakdown(engine.stats())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="sim:h200", help="sim:h200 (simulated), cpu, cuda")
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--concurrency", default="1,8,64")
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--duration", type=float, default=20.0, help="measured seconds, served and core")
    ap.add_argument("--warmup", type=float, default=5.0, help="served warm-up seconds")
    ap.add_argument("--threads", type=int, default=None, help="engine threads (default: advisor bench's)")
    ap.add_argument("--core-twice", action="store_true", help="run the core before and after the served run; "
                    "the ratio uses their mean (a shared machine's load moves)")
    ap.add_argument("--client-poll-us", type=float, default=0, help="an attribution experiment: the client's loop "
                    "polls up to this long before it sleeps, so the engine's step message wakes nobody "
                    "(benchmarks/busy_poll.py); not how advisor runs")
    ap.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE", help="own engine option, both sides")
    args = ap.parse_args()
    from advisor.run.manifest import cpu_idle

    # how idle CPUs wait decides what each served step's wake of the client costs on a VM (haltpoll_ab.sh)
    out: dict = {"args": vars(args), "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
                 "loadavg_before": os.getloadavg(), "cpu_idle": cpu_idle(), "rows": []}
    from adapters.placement import plan

    place = plan(args.threads)  # what `advisor bench` gives the engine: its threads and CPUs, for the core too
    cpus = list(place.engine_cpus) if place.engine_cpus else None
    with tempfile.TemporaryDirectory(prefix="serving-overhead-") as tmp:
        for c in (int(x) for x in args.concurrency.split(",")):
            k = core(args, c, place.engine_threads, cpus)
            s = served(args, c, Path(tmp), k["output_tok_s"])
            # the core again after the served run: on a shared machine the load moves; the mean of the two
            k2 = core(args, c, place.engine_threads, cpus) if args.core_twice else None
            core_tok_s = (k["output_tok_s"] + k2["output_tok_s"]) / 2 if k2 else k["output_tok_s"]
            row = {"concurrency": c, "served": s, "core": k, "core_after": k2, "core_tok_s": core_tok_s,
                   "ratio": round(s["output_tok_s"] / core_tok_s, 3) if s["output_tok_s"] else None}
            out["rows"].append(row)
            print(f"C={c}: served {s['output_tok_s']:.1f} tok/s ({s['verdict']}, client CPU {s['client_cpu_share']}), core {core_tok_s:.1f} tok/s "
                  f"({k['output_tok_s']:.1f}, {k2['output_tok_s'] if k2 else float('nan'):.1f}), ratio {row['ratio']}; "
                  f"served step {s['step']}; core step {k['step']}",
                  file=sys.stderr, flush=True)
    out["loadavg_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
