"""What an engine's prefix cache buys on multi-turn conversations: the same session workload, cache off and on.

    python benchmarks/prefix_cache.py                        # llama.cpp server (llama-cpp-python), small-100m
    python benchmarks/prefix_cache.py --engine vllm --server-python .venv-vllm/bin/python
    python benchmarks/prefix_cache.py --preset tiny --users 2 --sessions 1 --turns 3   # smoke run

Every turn resends the conversation so far (advisor's session workload, `advisor.loadgen.sessions`), so turn
k's prompt starts with turn k-1's prompt and answer. The server is launched by advisor (the openai
adapter's `launch`), once per setting, with its prefix cache off or on:

- llama.cpp server (`python -m llama_cpp.server`): `--cache false|true`. Off, llama-cpp-python still
  reuses the prefix it evaluated last (one sequence slot), which helps only when the same
  conversation comes back before any other; on, a RAM cache of saved states serves every conversation.
- vLLM (`vllm serve`-style OpenAI server): `--no-enable-prefix-caching` / `--enable-prefix-caching`.

Same schedule (seed 0), same messages, exact output lengths (EOS ignored) in both settings; settings
alternate (off, on, off, on, ...) so a drift of the shared machine hits both alike. Per-turn TTFT p50
and p95, overall TTFT and E2E, output tokens/s and the verdict go in a side-by-side table; the ratio
on/off of each setting's median over repeats is printed, and one JSON document last.
Run figures you report as `flock -x /tmp/advisor-cpu.lock python benchmarks/prefix_cache.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.servers.mock_openai import free_port  # noqa: E402 (a free loopback port)

SCENARIO = """name: prefix-cache-sessions
description: multi-turn conversations whose every turn resends the whole conversation so far
workload:
  input: {{dist: fixed, value: {msg}}}
  output: {{dist: fixed, value: {out}}}
sessions: {{users: {users}, sessions_per_user: {sessions}, turns: {{dist: fixed, value: {turns}}}, think_s: {think},
           think_cv: 0}}
duration_s: 60
warmup_s: 0
"""


def _model(args: argparse.Namespace) -> Path:
    from adapters.formats import convert
    from model_cache.create import create_model
    from model_cache.paths import is_model_dir, models_root

    folder = models_root() / args.preset
    if not is_model_dir(folder):
        create_model(args.preset, preset=args.preset)
    if args.engine == "llama-server":
        convert(folder, "gguf", "fp32")  # before any timing; cached and logit-checked
    return folder


def _launch(args: argparse.Namespace, model: Path, cache: bool, port: int) -> str:
    if args.engine == "llama-server":
        gguf = model / "converted" / "gguf-fp32" / "model.gguf"
        return (f"{args.server_python} -m llama_cpp.server --model {gguf} --host 127.0.0.1 --port {port} "
                f"--n_ctx {args.context} --n_threads {args.threads} --n_threads_batch {args.threads} "
                f"--cache {'true' if cache else 'false'} --interrupt_requests false --model_alias m --verbose false")
    flag = "--enable-prefix-caching" if cache else "--no-enable-prefix-caching"
    return (f"VLLM_CPU_KVCACHE_SPACE=1 OMP_NUM_THREADS={args.threads} {args.server_python} -m "
            f"vllm.entrypoints.openai.api_server --model {model} --served-model-name m --host 127.0.0.1 "
            f"--port {port} --max-model-len {args.context} --dtype float32 {flag}")


def run_one(args: argparse.Namespace, model: Path, cache: bool, scenario: Path, out: Path) -> dict:
    from advisor.run.bench import BenchConfig, bench_once
    from scenarios.overrides import Overrides

    port = free_port()
    cfg = BenchConfig(scenario=str(scenario), engine="openai", model=str(model), out_dir=out,
                      overrides=Overrides(seed=0), timeout_s=args.timeout,
                      engine_options={"url": f"http://127.0.0.1:{port}", "launch": _launch(args, model, cache, port),
                                      "tokenizer": str(model), "served_model": "m", "health_timeout_s": 600,
                                      "log_dir": str(out / f"server-{'on' if cache else 'off'}-{port}")})
    run = bench_once(cfg)
    s = run.summary
    sess = s.sessions
    return {"cache": "on" if cache else "off", "run_id": run.run_id, "verdict": run.verdict.status,
            "n_ok": s.n_ok, "ttft_p50_ms": s.ttft_ms.at(50), "ttft_p95_ms": s.ttft_ms.at(95),
            "e2e_p50_ms": s.e2e_ms.at(50), "output_tok_s": s.output_tokens_per_s,
            "prefix_reuse": sess.prefix_reuse if sess else None, "turns_dropped": sess.turns_dropped if sess else None,
            "by_turn": {t.turn: {"n": t.n, "ttft_p50_ms": t.ttft_ms.at(50), "ttft_p95_ms": t.ttft_ms.at(95),
                                 "prompt_p50": t.prompt_tokens.at(50)} for t in (sess.by_turn if sess else ())},
            "engine": run.engine.engine, "version": run.engine.version,
            "server_hit_rate": _server_hit_rate(run.telemetry.server_metrics or {})}


def _server_hit_rate(metrics: dict) -> float | None:
    """The server's own prefix-cache hits / queries over the run (vLLM's /metrics counters), else None."""
    delta = metrics.get("delta") or {}
    hits = sum(v for k, v in delta.items() if k.startswith(("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits")))
    queries = sum(v for k, v in delta.items()
                  if k.startswith(("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries")))
    return hits / queries if queries else None


def _median(rows: list[dict], key: str, turn: str | None = None) -> float | None:
    vals = [(r["by_turn"].get(turn) or {}).get(key) if turn else r.get(key) for r in rows]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def _fmt(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:,.{digits}f}"


def table(rows: list[dict]) -> str:
    off = [r for r in rows if r["cache"] == "off"]
    on = [r for r in rows if r["cache"] == "on"]
    turns = sorted({t for r in rows for t in r["by_turn"]}, key=lambda t: int(t.rstrip("+")))
    lines = ["| metric (median of repeats) | cache off | cache on | on / off |", "|---|---:|---:|---:|"]

    def line(label: str, key: str, turn: str | None = None, digits: int = 1) -> None:
        a, b = _median(off, key, turn), _median(on, key, turn)
        ratio = _fmt(b / a, 2) if a and b else "n/a"
        lines.append(f"| {label} | {_fmt(a, digits)} | {_fmt(b, digits)} | {ratio} |")

    line("TTFT p50 (ms), all turns", "ttft_p50_ms")
    line("TTFT p95 (ms), all turns", "ttft_p95_ms")
    for t in turns:
        line(f"TTFT p50 (ms), turn {t} (prompt ~{_fmt(_median(on, 'prompt_p50', t), 0)} tokens)", "ttft_p50_ms", t)
    line("E2E p50 (ms)", "e2e_p50_ms")
    line("output tokens/s", "output_tok_s")
    line("share of prompt tokens repeated from the previous turn", "prefix_reuse", digits=3)
    line("server's prefix-cache hit rate (its /metrics)", "server_hit_rate", digits=3)
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", choices=("llama-server", "vllm"), default="llama-server")
    ap.add_argument("--server-python", default=sys.executable, help="the Python that runs the server")
    ap.add_argument("--preset", default="small-100m", help="model preset (made once in the model cache)")
    ap.add_argument("--users", type=int, default=4, help="concurrent users (closed loop)")
    ap.add_argument("--sessions", type=int, default=2, help="conversations per user")
    ap.add_argument("--turns", type=int, default=6, help="turns per conversation")
    ap.add_argument("--msg", type=int, default=200, help="tokens of each new user message")
    ap.add_argument("--out", type=int, default=32, help="tokens of each answer")
    ap.add_argument("--think", type=float, default=0.5, help="seconds between an answer and the next message")
    ap.add_argument("--context", type=int, default=2048, help="server context (n_ctx / max-model-len)")
    ap.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--repeats", type=int, default=2, help="runs per setting, alternating off/on")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--out-dir", default=None, help="where the runs are saved (default: a temporary folder)")
    args = ap.parse_args()

    model = _model(args)
    out = Path(args.out_dir or tempfile.mkdtemp(prefix="prefix-cache-"))
    out.mkdir(parents=True, exist_ok=True)
    scenario = out / "sessions.yaml"
    scenario.write_text(SCENARIO.format(msg=args.msg, out=args.out, turns=args.turns, users=args.users,
                                        sessions=args.sessions, think=args.think))
    rows = []
    for rep in range(args.repeats):
        for cache in (False, True):
            row = run_one(args, model, cache, scenario, out)
            row["repeat"] = rep
            rows.append(row)
            print(f"repeat {rep} cache {row['cache']}: TTFT p50 {_fmt(row['ttft_p50_ms'])} ms, "
                  f"p95 {_fmt(row['ttft_p95_ms'])} ms, {row['verdict']}", file=sys.stderr)
    print(f"{args.engine} ({rows[0]['engine']} {rows[0]['version']}), model {args.preset}, {args.users} users x "
          f"{args.sessions} conversations x {args.turns} turns, messages {args.msg} tokens, answers {args.out}, "
          f"think {args.think} s, {args.threads} threads, {args.repeats} repeats\n")
    print(table(rows) + "\n")
    print(json.dumps({"engine": args.engine, "preset": args.preset, "args": vars(args), "runs": rows}))


if __name__ == "__main__":
    main()
