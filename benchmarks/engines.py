"""Benchmark the CPU engines on one model, in one run, against own_engine's targets (issue 12).

    python benchmarks/engines.py                       # small-100m, 5 engines, 1 and 8 users, 3 repeats
    python benchmarks/engines.py --preset tiny --engines own,own-static --requests 20 --repeats 1   # smoke run
    python benchmarks/engines.py --engines own,own:max_num_batched_tokens=128,openvino   # an engine option as a row

Load: the `chat-closed` workload (its lengths, its small-machine length
scale and caps) as a closed loop WITHOUT think time: each user sends its next
request as soon as the previous one ends, so a cell of `--requests` measured
requests takes minutes, not hours. Each user's first request is warm-up
(excluded), on top of each adapter's own warm-up in start(). Every engine
gets the same schedule (same prompt token ids, exact output lengths: EOS
ignored), the same thread count, a batch limit equal to the number of users,
a context of max input + max output tokens, and the same KV-cache precision
(`--kv`, default f32: own_engine and the ONNX export always keep fp32 KV;
the KV column says what each used). Models are converted once, before any
timing, and logit-checked.

Each (engine, users, repeat) cell runs in a fresh Python process, so cold
start and peak RSS are that engine's alone; repeats are interleaved over
engines so machine noise hits all alike. The table gives each figure as the
median over repeats with its order-statistic interval (advisor.metrics.intervals:
3 repeats give the [min, max] interval at 75% coverage, docs/metrics.md), and
every ratio to own_engine as the median of the per-round ratios (own / other,
the two cells of one round paired) with the same kind of interval. A target is
met when the whole interval meets it, not met when the whole interval misses
it, and "not established" when the interval straddles it. Per cell: cold start (engine import + model load + warm-up until
the first request can be served, timed around the adapter's start()), peak
RSS of the process holding the engine (the kernel's high-water mark over the
cell, load included), decode tok/s per request (1000 / TPOT p50), output
tok/s, TTFT p50/p95 and the run's verdict (VALID needs >= 100 measured
requests). One JSON document is printed last; `--md benchmarks/history/engines.md`
puts the table between this script's markers in that file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines_table import (  # noqa: E402  (this folder: the script's own)
    fmt,
    is_own,
    markdown,
    medians,
    ratios,
    split_label,
    targets,
    write_section,
)

ENGINES = ("own", "own-static", "llama_cpp", "onnxruntime", "openvino")
FORMAT = {"llama_cpp": "gguf", "onnxruntime": "onnx", "openvino": "openvino"}
WORKLOAD = "chat-closed"  # lengths and their fit to a small machine come from this shipped scenario


def engine_options(engine: str, threads: int, users: int, max_len: int, kv: str) -> dict:
    """Each engine configured to batch up to `users` requests of `max_len` tokens with `threads` threads."""
    if engine in ("own", "own-static"):
        return {"device": "cpu", "threads": threads, "max_batch": users, "max_model_len": max_len}
    if engine == "llama_cpp":
        return {"threads": threads, "max_batch": users, "n_ctx": max_len, "kv_cache_precision": kv}
    if engine == "onnxruntime":
        return {"threads": threads, "max_batch": users, "max_length": max_len}
    return {"threads": threads, "max_batch": users, "kv_cache_precision": kv}


def write_scenario(out_dir: Path, users: int, measured: int,
                   length_scale: float | None = None) -> tuple[Path, dict[str, Any]]:
    """The workload as a closed loop without think time: one warm-up request per user, then >= `measured`.

    Returns the scenario file and the length overrides (the workload's own `fit` values, its length
    scale replaced by `length_scale` when given).
    """
    from scenarios.catalog import SCENARIO_DIR

    data = yaml.safe_load((SCENARIO_DIR / f"{WORKLOAD}.yaml").read_text())
    fit = data.pop("fit")
    if length_scale is not None:
        fit["length_scale"] = length_scale
    rounds = math.ceil(measured / users)
    data.update(name=f"{WORKLOAD}-nothink-{users}",
                description=f"{WORKLOAD}'s lengths, {users} users in a closed loop without think time",
                arrival={"process": "closed", "concurrency": users, "think_s": 0.0, "think_cv": 0.0,
                         "requests_per_user": 1 + rounds},
                # a closed loop counts warm-up in rounds: ceil(rounds_total * warmup / (warmup + duration)) = 1
                warmup_s=1.0, duration_s=float(rounds))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    lengths = {k: fit[k] for k in ("length_scale", "max_input_tokens", "max_output_tokens")}
    return path, lengths


def run_cell(args: argparse.Namespace) -> dict:
    """One (engine, users) cell in this process; the numbers that go in the table."""
    import adapters
    from advisor.run.bench import BenchConfig, run_bench
    from scenarios.overrides import Overrides

    scenario, lengths = write_scenario(Path(args.out_dir), args.users, args.requests, args.length_scale)
    max_len = lengths["max_input_tokens"] + lengths["max_output_tokens"]
    engine, extra = split_label(args.one)
    opts = {**engine_options(engine, args.threads, args.users, max_len, args.kv), **extra}
    t0 = time.perf_counter()
    adapter = adapters.create(engine, args.model, **opts)
    info = adapter.start()
    cold_start_s = time.perf_counter() - t0  # engine process start, import, load and warm-up (>= info.ready_s)
    try:
        cfg = BenchConfig(scenario=str(scenario), engine=engine, model=args.model, engine_options=opts,
                          overrides=Overrides(seed=0, **lengths), out_dir=Path(args.out_dir))
        res = run_bench(cfg, adapter)  # started above: run_bench neither starts nor closes it
    finally:
        adapter.close()
    s, tel = res.summary, res.telemetry
    tpot = s.tpot_ms.at(50)
    ttft = s.ttft_ms
    return {"engine": args.one, "users": args.users, "run_id": res.run_id, "version": res.engine.version,
            "batching": res.engine.batching, "kv_cache_dtype": res.engine.kv_cache_dtype,
            "threads": res.engine.threads, "cold_start_s": cold_start_s, "ready_s": info.ready_s,
            "decode_tok_s": 1000.0 / tpot if tpot else None, "output_tok_s": s.output_tokens_per_s,
            "ttft_p50_ms": ttft.at(50), "ttft_p95_ms": ttft.at(95), "rss_peak_mb": tel.rss_peak_mb,
            "n_ok": s.n_ok, "verdict": res.verdict.status, "reasons": list(res.verdict.reasons)}


def _busy_cpu_s() -> float:
    """CPU seconds every core of the machine has spent busy since boot."""
    import psutil

    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def _children_cpu_s() -> float:
    """CPU seconds of this script's finished children (the cells)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="small-100m")
    ap.add_argument("--model", default=None, help="model folder (default: the preset, created if missing)")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--users", default="1,8", help="closed-loop users per cell: the lowest is the batch-1 cell")
    ap.add_argument("--requests", type=int, default=100, help="measured requests per cell (at least)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--kv", choices=("f32", "f16"), default="f32",
                    help="KV-cache precision for llama_cpp and openvino (own_engine and onnxruntime keep fp32)")
    ap.add_argument("--length-scale", type=float, default=None,
                    help=f"scale of {WORKLOAD}'s prompt and output lengths (default: the workload's own, 0.25)")
    ap.add_argument("--out-dir", default="runs/engines")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per cell, seconds")
    ap.add_argument("--md", default=None, help="write the markdown table here (e.g. benchmarks/history/engines.md)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # child mode: one cell
    args = ap.parse_args()
    if args.one:
        args.users = int(args.users)
        print(json.dumps(run_cell(args)))
        return

    import adapters
    from adapters.formats import convert
    from model_cache.create import create_model
    from model_cache.paths import is_model_dir, models_root

    if args.model is None:
        path = models_root() / args.preset
        if not is_model_dir(path):
            create_model(args.preset, args.preset)
        args.model = str(path)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    users = sorted(int(x) for x in args.users.split(","))
    cells: list[dict] = []
    for e in engines:  # bad labels and options stop here, before any timing
        try:
            name, extra = split_label(e)
            if not adapters.why_unavailable(name):
                adapters.parse_options(name, extra)
        except (ValueError, KeyError, adapters.EngineUnavailable) as err:
            ap.error(f"--engines {e}: {err}")
    for e in engines:  # convert (and logit-check) before any timing
        name = split_label(e)[0]
        why = adapters.why_unavailable(name)
        if why:
            cells.extend({"engine": e, "users": u, "error": why} for u in users)
        elif name in FORMAT:
            convert(Path(args.model), FORMAT[name], "fp32")  # type: ignore[arg-type]
    ready = [e for e in engines if not adapters.why_unavailable(split_label(e)[0])]
    t_start = time.perf_counter()
    for rep in range(args.repeats):
        for u in users:
            for e in ready:
                cmd = [sys.executable, __file__, "--one", e, "--users", str(u), "--model", args.model,
                       "--threads", str(args.threads), "--requests", str(args.requests), "--kv", args.kv,
                       "--out-dir", args.out_dir]
                if args.length_scale is not None:
                    cmd += ["--length-scale", str(args.length_scale)]
                t0 = time.perf_counter()
                busy0, mine0 = _busy_cpu_s(), _children_cpu_s()
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                except subprocess.TimeoutExpired:
                    cells.append({"engine": e, "users": u, "repeat": rep, "error": f"over {args.timeout:g} s"})
                    continue
                # CPU the rest of the machine used meanwhile, in cores: other work skews every figure of the cell
                other_cores = ((_busy_cpu_s() - busy0) - (_children_cpu_s() - mine0)) / (time.perf_counter() - t0)
                if proc.returncode != 0:
                    cells.append({"engine": e, "users": u, "repeat": rep, "error": proc.stderr.strip()[-500:]})
                    print(f"{e} x{u} #{rep}: FAILED {proc.stderr.strip()[-300:]}", file=sys.stderr)
                    continue
                cell = json.loads(proc.stdout.strip().splitlines()[-1])
                cell.update(repeat=rep, cell_s=round(time.perf_counter() - t0, 1), other_load_cores=other_cores)
                cells.append(cell)
                print(f"{e} x{u} #{rep} ({cell['cell_s']} s, other load {other_cores:.2f} cores): "
                      f"{cell['verdict']} n={cell['n_ok']} "
                      f"decode {fmt(cell['decode_tok_s'], '.1f')} tok/s, output {fmt(cell['output_tok_s'], '.1f')}"
                      f" tok/s, TTFT p50 {fmt(cell['ttft_p50_ms'], '.0f')} ms, RSS {fmt(cell['rss_peak_mb'], '.0f')}"
                      f" MB, cold {cell['cold_start_s']:.1f} s", file=sys.stderr)
    rows = medians(cells)
    owns = [e for e in ready if is_own(e)]
    ratio_rows = [x for own in owns for x in ratios(cells, rows, users[0], users[-1], own)]
    checks = [c for own in owns for c in targets(cells, rows, users[0], users[-1], own)]
    command = " ".join(["python", "benchmarks/engines.py", *sys.argv[1:]])
    scale = f"length scale {args.length_scale:g}" if args.length_scale is not None else "its own length scale"
    header = (f"Model {Path(args.model).name}, workload {WORKLOAD} ({scale}) as a closed loop without think time, "
              f"{args.requests}+ measured requests per cell, {args.threads} threads, fp32 weights, "
              f"{args.repeats} repeats, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
              f"{(time.perf_counter() - t_start) / 60:.0f} min in all.")
    if args.md:
        write_section(Path(args.md), markdown(rows, ratio_rows, checks, command, header))
    print(json.dumps({"model": args.model, "threads": args.threads, "command": command, "rows": rows,
                      "ratios": ratio_rows, "targets": checks, "cells": cells}, indent=1, default=_jsonable))


def _jsonable(o: object) -> object:
    from advisor.metrics.intervals import Interval

    return o.to_dict() if isinstance(o, Interval) else str(o)


if __name__ == "__main__":
    main()
