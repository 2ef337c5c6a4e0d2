"""Benchmark the CPU engines on one model, in one run, against own_engine's targets (issue 12).

    python benchmarks/engines.py                       # small-100m, 5 engines, 1 and 8 users, 3 repeats
    python benchmarks/engines.py --preset tiny --engines own,own-static --requests 20 --repeats 1   # smoke run
    python benchmarks/engines.py --engines own,own:linear_kernels=openblas-gemv,openvino   # an engine option as a row

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
requests). One JSON document is printed last; `--md benchmarks/RESULTS.md`
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
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from advisor.metrics.intervals import Interval

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ENGINES = ("own", "own-static", "llama_cpp", "onnxruntime", "openvino")
FORMAT = {"llama_cpp": "gguf", "onnxruntime": "onnx", "openvino": "openvino"}
WORKLOAD = "chat-closed"  # lengths and their fit to a small machine come from this shipped scenario
METRICS = ("cold_start_s", "rss_peak_mb", "decode_tok_s", "output_tok_s", "ttft_p50_ms", "ttft_p95_ms",
           "other_load_cores")


def split_label(label: str) -> tuple[str, dict[str, str]]:
    """'own:linear_kernels=openblas-gemv' -> ('own', {'linear_kernels': 'openblas-gemv'}): an engine and options
    of its own, on top of the common ones, as one row of the table."""
    engine, *pairs = label.split(":")
    opts = dict(p.split("=", 1) for p in pairs if "=" in p)
    if len(opts) != len(pairs):
        raise ValueError(f"{label!r}: write an engine with options as ENGINE:KEY=VALUE[:KEY=VALUE]")
    return engine, opts


def is_own(label: str, static_too: bool = False) -> bool:
    return split_label(label)[0] in (("own", "own-static") if static_too else ("own",))


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
    from advisor.bench import BenchConfig, run_bench
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


def _interval(vals: list[float]) -> Interval | None:
    from advisor.metrics.intervals import median_interval

    return median_interval(vals) if vals else None


def medians(cells: list[dict]) -> list[dict]:
    """One row per (engine, users): each metric as the median of the repeats with its interval, every verdict."""
    rows = []
    keys = dict.fromkeys((c["engine"], c["users"]) for c in cells)
    for engine, users in keys:
        mine = [c for c in cells if (c["engine"], c["users"]) == (engine, users)]
        ok = [c for c in mine if "error" not in c]
        row: dict[str, Any] = {"engine": engine, "users": users, "repeats": len(ok),
                               "verdicts": [c.get("verdict", "ERROR") for c in mine],
                               "n_ok": [c.get("n_ok") for c in ok],
                               "errors": [c["error"] for c in mine if "error" in c]}
        for k in ("version", "batching", "kv_cache_dtype", "threads"):
            row[k] = ok[0][k] if ok else None
        for m in METRICS:
            row[m] = _interval([c[m] for c in ok if c.get(m) is not None])
        rows.append(row)
    return rows


# (metric, which users cell, higher is better, label): the figures every engine is compared on, own / other
RATIOS = (("decode_tok_s", "low", True, "batch-1 decode tok/s"),
          ("output_tok_s", "high", True, "output tok/s at {high} users"),
          ("ttft_p50_ms", "high", False, "TTFT p50 at {high} users"),
          ("rss_peak_mb", "high", False, "peak RSS at {high} users"),
          ("cold_start_s", "high", False, "cold start at {high} users"))


def paired_ratio(cells: list[dict], metric: str, users: int, other: str, own: str = "own") -> Interval | None:
    """own / other for `metric`, per round (the two cells of one repeat paired), as median + interval."""
    by = {(c["engine"], c.get("repeat")): c.get(metric) for c in cells
          if c["users"] == users and "error" not in c}
    rounds = sorted({r for (_, r) in by})
    vals = [by[(own, r)] / by[(other, r)] for r in rounds
            if by.get((own, r)) is not None and by.get((other, r))]
    return _interval(vals)


def ratios(cells: list[dict], rows: list[dict], low: int, high: int, own: str = "own") -> list[dict]:
    """Every other engine against own_engine (the row `own`) on each RATIOS figure."""
    others = [r["engine"] for r in rows if r["users"] == low and not is_own(r["engine"], static_too=True)]
    out = []
    for metric, which, higher, label in RATIOS:
        users = low if which == "low" else high
        for other in others:
            out.append({"figure": label.format(high=high), "metric": metric, "users": users, "other": other,
                        "own": own, "higher_is_better": higher,
                        "ratio": paired_ratio(cells, metric, users, other, own)})
    return out


def _verdict(iv: Interval | None, factor: float, higher_is_better: bool) -> str | None:
    """'met' when the whole interval meets the target, 'not met' when the whole interval misses it."""
    if iv is None:
        return None
    lo_ok, hi_ok = ((iv.low >= factor, iv.high >= factor) if higher_is_better
                    else (iv.low <= factor, iv.high <= factor))
    if lo_ok and hi_ok:
        return "met"
    if not lo_ok and not hi_ok:
        return "not met"
    return "not established (interval spans the target)"


def targets(cells: list[dict], rows: list[dict], low: int, high: int, own: str = "own") -> list[dict]:
    """Issue 12's four targets for own_engine, each with its figures, the paired ratio and whether it is met."""
    def get(engine: str, users: int, metric: str) -> Interval | None:
        return next((r[metric] for r in rows if r["engine"] == engine and r["users"] == users), None)

    others = [(r["decode_tok_s"].value, r["engine"]) for r in rows
              if r["users"] == low and not is_own(r["engine"], static_too=True) and r["decode_tok_s"]]
    best = max(others, default=(None, None))[1]

    def check(name: str, metric: str, users: int, ref: str | None, factor: float, higher_is_better: bool) -> dict:
        ratio = paired_ratio(cells, metric, users, ref, own) if ref else None
        met = _verdict(ratio, factor, higher_is_better) if ratio else None
        return {"target": name, "own_engine": own, "own": get(own, users, metric),
                "reference": get(ref, users, metric) if ref else None,
                "reference_engine": ref, "ratio": ratio, "factor": factor, "met": met}

    return [check(f"batch-1 decode >= 1.0x the best other engine ({low} user)", "decode_tok_s", low, best, 1.0, True),
            check(f"output tok/s at {high} users >= OpenVINO's", "output_tok_s", high, "openvino", 1.0, True),
            check(f"TTFT p50 at {high} users <= OpenVINO's", "ttft_p50_ms", high, "openvino", 1.0, False),
            check(f"peak RSS <= 1.2x llama.cpp's ({high} users)", "rss_peak_mb", high, "llama_cpp", 1.2, False)]


def _fmt(v: Interval | float | None, spec: str) -> str:
    """'12.3 [11.0, 13.1]' for an interval, '12.3' for one value, '-' for none."""
    if v is None:
        return "-"
    if isinstance(v, (int, float)):
        return f"{v:{spec}}"
    if v.n <= 1:
        return f"{v.value:{spec}}"
    return f"{v.value:{spec}} [{v.low:{spec}}, {v.high:{spec}}]"


def markdown(rows: list[dict], ratio_rows: list[dict], checks: list[dict], command: str, header: str) -> str:
    n = max((r["repeats"] for r in rows), default=0)
    cov = next((iv.coverage for r in rows for m in METRICS if (iv := r[m]) is not None and iv.coverage), None)
    how = (f"Each figure: median of {n} repeats [interval of the median, {cov:.0%} coverage, "
           "order statistics (docs/metrics.md)]." if cov else "One repeat: no intervals.")
    lines = [header, "", f"Command: `{command}`", "", how, "",
             "| engine | users | batching | KV | cold start s | decode tok/s | output tok/s | TTFT p50 ms "
             "| TTFT p95 ms | peak RSS MB | other load (cores) | verdicts (n measured) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        verdicts = ", ".join(f"{v} ({n})" for v, n in zip(r["verdicts"], r["n_ok"] + [None] * 9, strict=False))
        if r["errors"]:
            verdicts += f"; error: {r['errors'][0][:80]}"
        lines.append(f"| {r['engine']} | {r['users']} | {r['batching'] or '-'} | {r['kv_cache_dtype'] or '-'} | "
                     f"{_fmt(r['cold_start_s'], '.1f')} | {_fmt(r['decode_tok_s'], '.1f')} | "
                     f"{_fmt(r['output_tok_s'], '.1f')} | {_fmt(r['ttft_p50_ms'], '.0f')} | "
                     f"{_fmt(r['ttft_p95_ms'], '.0f')} | {_fmt(r['rss_peak_mb'], '.0f')} | "
                     f"{_fmt(r['other_load_cores'], '.2f')} | {verdicts} |")
    others = list(dict.fromkeys(x["other"] for x in ratio_rows))
    figures = list(dict.fromkeys(x["figure"] for x in ratio_rows))
    for own in dict.fromkeys(x["own"] for x in ratio_rows):
        lines += ["", f"{own} / other engine, median of the per-round ratios [interval]:", "",
                  "| figure | " + " | ".join(f"{own} / {o}" for o in others) + " |",
                  "|---|" + "---|" * len(others)]
        for f in figures:
            cells = {x["other"]: x for x in ratio_rows if x["figure"] == f and x["own"] == own}
            better = "higher" if next(iter(cells.values()))["higher_is_better"] else "lower"
            lines.append(f"| {f} ({better} is better for own) | "
                         + " | ".join(_fmt(cells[o]["ratio"], ".2f") for o in others) + " |")
    lines += ["", "| own_engine target | own engine row | own | reference | own / reference | met |",
              "|---|---|---|---|---|---|"]
    for c in checks:
        lines.append(f"| {c['target']} | {c['own_engine']} | {_fmt(c['own'], '.1f')} | {_fmt(c['reference'], '.1f')} "
                     f"({c['reference_engine'] or '-'}) | {_fmt(c['ratio'], '.2f')} | {c['met'] or '-'} |")
    return "\n".join(lines) + "\n"


START, END = "<!-- benchmarks/engines.py:start -->", "<!-- benchmarks/engines.py:end -->"


def write_section(path: Path, section: str) -> None:
    """Put the table between this script's markers in `path`, leaving the rest of the file as it was."""
    block = f"{START}\n{section}{END}\n"
    text = path.read_text() if path.exists() else ""
    if START in text and END in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END) + 1:]
    else:
        text = text + ("\n" if text and not text.endswith("\n") else "") + block
    path.write_text(text)


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
    ap.add_argument("--md", default=None, help="write the markdown table here (e.g. benchmarks/RESULTS.md)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # child mode: one cell
    args = ap.parse_args()
    if args.one:
        args.users = int(args.users)
        print(json.dumps(run_cell(args)))
        return

    import adapters
    from adapters.formats import convert
    from own_engine.create import create_model
    from own_engine.paths import is_model_dir, models_root

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
                      f"decode {_fmt(cell['decode_tok_s'], '.1f')} tok/s, output {_fmt(cell['output_tok_s'], '.1f')}"
                      f" tok/s, TTFT p50 {_fmt(cell['ttft_p50_ms'], '.0f')} ms, RSS {_fmt(cell['rss_peak_mb'], '.0f')}"
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
