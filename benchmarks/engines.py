"""Benchmark the four CPU engines on one model and one scenario, as ratios to own_engine measured in the same run.

    python benchmarks/engines.py                                  # small-100m, chat-closed at 1 and 8 users
    python benchmarks/engines.py --preset tiny --duration 5 --warmup 1 --max-output-tokens 16   # smoke run

Same model (converted once, before any timing, logit-checked), same scenario
schedule (same prompt token ids and exact output lengths: EOS ignored), same
thread count for every engine, warm-up excluded by the scenario's warm-up
window and by each adapter's own warm-up in start(). Each (engine,
concurrency) cell runs in a fresh Python process so peak RSS is that
engine's alone. The load goes through `advisor.bench.run_bench` on the
closed-loop `chat-closed` scenario (the `chat` workload with a fixed number
of users): decode tokens/s per request (1000 / TPOT p50), aggregate output
tokens/s, TTFT p50/p95, peak RSS. One JSON document is printed last;
`--md benchmarks/RESULTS.md` puts the table in that file between this
script's markers, leaving the rest of the file alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ENGINES = ("own", "llama_cpp", "onnxruntime", "openvino")
FORMAT = {"llama_cpp": "gguf", "onnxruntime": "onnx", "openvino": "openvino"}


def engine_options(engine: str, threads: int, concurrency: int, max_len: int, kv: str) -> dict:
    """Each engine configured to batch up to `concurrency` requests, with `threads` compute threads.

    `kv` is the KV-cache precision for the engines that let one choose it (llama_cpp, openvino); own_engine
    and the onnxruntime export keep an fp32 KV cache. EngineInfo.kv_cache_dtype records what each used.
    """
    if engine == "own":
        return {"device": "cpu", "threads": threads}
    if engine == "llama_cpp":
        return {"threads": threads, "parallel": max(1, concurrency), "n_ctx": max_len, "kv_cache_precision": kv}
    if engine == "onnxruntime":
        return {"threads": threads, "max_batch": max(1, concurrency), "max_length": max_len}
    return {"threads": threads, "max_batch": max(1, concurrency), "kv_cache_precision": kv}


def run_one(args: argparse.Namespace) -> dict:
    """One (engine, concurrency) cell in this process; returns the numbers that go in the table."""
    from advisor.bench import BenchConfig, run_bench
    from scenarios.overrides import Overrides

    ov = Overrides(concurrency=args.concurrency, duration_s=args.duration, warmup_s=args.warmup, seed=0,
                   max_input_tokens=args.max_input_tokens, max_output_tokens=args.max_output_tokens)
    opts = engine_options(args.one, args.threads, args.concurrency, args.max_input_tokens + args.max_output_tokens,
                          args.kv)
    cfg = BenchConfig(scenario=args.scenario, engine=args.one, model=args.model, overrides=ov,
                      engine_options=opts, out_dir=Path(args.out_dir))
    res = run_bench(cfg)
    s, tel = res.summary, res.telemetry
    tpot = (s.get("tpot_ms") or {}).get("p50")
    return {"engine": args.one, "concurrency": args.concurrency, "run_id": res.run_id,
            "version": res.engine.get("version"), "batching": res.engine.get("batching"),
            "kv_cache_dtype": res.engine.get("kv_cache_dtype"),
            "decode_tok_s": 1000.0 / tpot if tpot else None, "output_tok_s": s.get("output_tokens_per_s"),
            "ttft_p50_ms": (s.get("ttft_ms") or {}).get("p50"), "ttft_p95_ms": (s.get("ttft_ms") or {}).get("p95"),
            "rss_peak_mb": tel.get("rss_peak_mb"), "n_requests": (s.get("ttft_ms") or {}).get("n"),
            "verdict": res.verdict.get("status")}


def ratios(rows: list[dict]) -> list[dict]:
    """Each row's metrics divided by own_engine's at the same concurrency (>1 = better for tok/s, worse for ms/MB)."""
    base = {r["concurrency"]: r for r in rows if r["engine"] == "own" and "error" not in r}
    out = []
    for r in rows:
        b = base.get(r["concurrency"])
        rr = dict(r)
        for k in ("decode_tok_s", "output_tok_s", "ttft_p50_ms", "ttft_p95_ms", "rss_peak_mb"):
            if b and r.get(k) and b.get(k):
                rr[k + "_vs_own"] = round(r[k] / b[k], 3)
        out.append(rr)
    return out


def markdown(rows: list[dict], command: str) -> str:
    lines = [f"Command: `{command}`", "",
             "| engine | users | batching | KV | decode tok/s (x own) | output tok/s (x own) | TTFT p50 ms (x own) "
             "| TTFT p95 ms (x own) | peak RSS MB (x own) |", "|---|---|---|---|---|---|---|---|---|"]

    def cell(r: dict, k: str, fmt: str) -> str:
        v, x = r.get(k), r.get(k + "_vs_own")
        return "-" if v is None else f"{v:{fmt}}" + (f" ({x:.2f})" if x is not None else "")

    for r in rows:
        if "error" in r:
            lines.append(f"| {r['engine']} | {r['concurrency']} | error: {r['error'][:80]} | | | | | | |")
            continue
        lines.append(f"| {r['engine']} | {r['concurrency']} | {r['batching']} | {r.get('kv_cache_dtype')} | "
                     f"{cell(r, 'decode_tok_s', '.1f')} | "
                     f"{cell(r, 'output_tok_s', '.1f')} | {cell(r, 'ttft_p50_ms', '.0f')} | "
                     f"{cell(r, 'ttft_p95_ms', '.0f')} | {cell(r, 'rss_peak_mb', '.0f')} |")
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
    ap.add_argument("--scenario", default="chat-closed")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--concurrency", default="1,8")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--duration", type=float, default=55.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--max-input-tokens", type=int, default=512)
    ap.add_argument("--max-output-tokens", type=int, default=128)
    ap.add_argument("--kv", choices=("f32", "f16"), default="f16",
                    help="KV-cache precision for llama_cpp and openvino (llama.cpp's default is f16)")
    ap.add_argument("--out-dir", default="runs/engines")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per cell, seconds")
    ap.add_argument("--md", default=None, help="write the markdown table here (e.g. benchmarks/RESULTS.md)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # child mode: one engine
    args = ap.parse_args()
    if args.one:
        args.concurrency = int(args.concurrency)
        print(json.dumps(run_one(args)))
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
    rows: list[dict] = []
    for e in engines:  # convert (and logit-check) before any timing
        why = adapters.why_unavailable(e)
        if why:
            rows.append({"engine": e, "concurrency": "-", "error": why})
        elif e in FORMAT:
            convert(Path(args.model), FORMAT[e], "fp32")  # type: ignore[arg-type]
    ready = [e for e in engines if not adapters.why_unavailable(e)]
    for c in [int(x) for x in args.concurrency.split(",")]:
        for e in ready:
            cmd = [sys.executable, __file__, "--one", e, "--concurrency", str(c), "--model", args.model,
                   "--scenario", args.scenario, "--threads", str(args.threads), "--duration", str(args.duration),
                   "--warmup", str(args.warmup), "--max-input-tokens", str(args.max_input_tokens),
                   "--max-output-tokens", str(args.max_output_tokens), "--out-dir", args.out_dir, "--kv", args.kv]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            if proc.returncode != 0:
                rows.append({"engine": e, "concurrency": c, "error": proc.stderr.strip()[-500:]})
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row["cell_s"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
            print(f"{e} x{c}: {row}", file=sys.stderr)
    rows = ratios(rows)
    command = " ".join(["python", "benchmarks/engines.py", *sys.argv[1:]])
    if args.md:
        section = (f"## CPU engines vs own_engine\n\nModel: {args.model} (preset {args.preset}), scenario "
                   f"{args.scenario}, {args.threads} threads, fp32 weights everywhere, KV cache as in the KV column, "
                   f"{time.strftime('%Y-%m-%d')}.\n\n"
                   + markdown(rows, command))
        write_section(Path(args.md), section)
    print(json.dumps({"model": args.model, "scenario": args.scenario, "threads": args.threads,
                      "command": command, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
