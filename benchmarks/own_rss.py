"""Where own_engine's resident memory goes while it serves: VmRSS / VmHWM by stage (issue 12 part 4).

    python benchmarks/own_rss.py --model /tmp/advisor-home-i12serve/models/small-100m --users 8 --requests 100
    python benchmarks/own_rss.py ... --cache-cap 16          # oneDNN's and ideep's caches at 16 entries
    python benchmarks/own_rss.py ... --no-kv-release         # freed KV blocks keep their pages
    python benchmarks/own_rss.py ... --mmap-threshold-kb 128 # glibc's mmap threshold fixed (not dynamic)
    python benchmarks/own_rss.py ... --trim-after-tokens 64  # malloc_trim(0) after steps with prompt chunks

Builds `LLMEngine` as the `own` adapter does (on the thread that steps it,
`max_num_seqs` = users, `max_model_len` = the workload's max input + max
output) and drives it directly, without the adapter's process and event loop:
the same prompts and exact output lengths as `benchmarks/engines.py`'s
`chat-closed` closed loop (its length scale and caps, seed 0), `--users`
requests in flight, a new one added as soon as one finishes. Prints the
process's VmRSS and VmHWM (MB) after each stage and every `--every`
requests, the highest KV block ever written and the most blocks in use at
once, and the serving time (a probe of memory, not of speed: use
`benchmarks/engines.py` for speed). One process per configuration: the
caches' sizes are read once per process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def status_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB, from /proc/self/status (Linux)."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024  # kB -> MB (the kernel's kB are KiB; MB here = MiB)
    return fields["VmRSS"], fields["VmHWM"]


def requests(users: int, count: int, length_scale: float | None) -> tuple[list[tuple[list[int], int]], int]:
    """(prompt ids, output tokens) of every request of engines.py's schedule in order, and max_model_len."""
    from engines import write_scenario  # this folder: the script's own

    from advisor.run.bench import BenchConfig, plan
    from scenarios.overrides import Overrides
    from scenarios.prompts import make_prompt_ids

    out = Path(tempfile.mkdtemp(prefix="own_rss-"))
    scenario, lengths = write_scenario(out, users, count, length_scale)
    p = plan(BenchConfig(scenario=str(scenario), engine="own", overrides=Overrides(seed=0, **lengths), out_dir=out))
    vocab = 16000
    reqs = [(make_prompt_ids(r, p.schedule.seed, vocab, token_range=(3, vocab)), r.n_out) for r in p.schedule.requests]
    return reqs, lengths["max_input_tokens"] + lengths["max_output_tokens"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--length-scale", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--cache-cap", type=int, default=None, help="oneDNN and ideep cache entries (default: the engine's)")
    ap.add_argument("--no-kv-release", action="store_true", help="freed KV blocks keep their pages")
    ap.add_argument("--mmap-threshold-kb", type=int, default=None, help="glibc's mmap threshold, fixed at this")
    ap.add_argument("--trim-after-tokens", type=int, default=None,
                    help="malloc_trim(0) after every step that fed at least this many tokens")
    args = ap.parse_args()
    if not Path(args.model).is_dir():
        ap.error(f"--model: no model folder at {args.model}")
    if min(args.users, args.requests, args.threads, args.every) < 1:
        ap.error("--users, --requests, --threads and --every must be >= 1")
    if args.cache_cap is not None:
        os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = os.environ["LRU_CACHE_CAPACITY"] = str(args.cache_cap)
    stages: list[dict] = []

    def mark(stage: str, **extra: object) -> None:
        rss, hwm = status_mb()
        stages.append({"stage": stage, "rss_mb": round(rss, 1), "hwm_mb": round(hwm, 1), **extra})
        print(f"{stage:<40} VmRSS {rss:7.1f} MB  VmHWM {hwm:7.1f} MB  {extra or ''}", flush=True)

    reqs, max_len = requests(args.users, args.requests, args.length_scale)
    mark("schedule built")
    import torch  # noqa: F401

    mark("torch imported")
    result: dict = {}

    def serve() -> None:  # on one thread, as AsyncLLMEngine does: build there, step there
        from own_engine.core.engine_config import EngineConfig
        from own_engine.core.llm_engine import LLMEngine
        from own_engine.core.sampling_params import SamplingParams

        kw = {}
        if args.no_kv_release:
            kw["release_freed_kv"] = False
        if args.mmap_threshold_kb is not None:  # fixed: glibc no longer raises it to the largest block freed
            from own_engine.core.memory_release import LIBC

            assert LIBC.mallopt(M_MMAP_THRESHOLD, args.mmap_threshold_kb * 1024)
            assert LIBC.mallopt(M_TRIM_THRESHOLD, 1024 * 1024)
        engine = LLMEngine(EngineConfig(args.model, device="cpu", threads=args.threads, max_num_seqs=args.users,
                           max_model_len=max_len, **kw))
        mark("engine built")
        result["trim_s"] = 0.0
        if args.trim_after_tokens is not None:
            from own_engine.core.memory_release import LIBC

            run = engine.runner.run

            def run_and_trim(batch):  # noqa: ANN001, ANN202
                out = run(batch)
                if batch.num_tokens >= args.trim_after_tokens:
                    t = time.perf_counter()
                    LIBC.malloc_trim(0)
                    result["trim_s"] += time.perf_counter() - t
                return out

            engine.runner.run = run_and_trim

        def params(n: int) -> SamplingParams:
            return SamplingParams(max_tokens=n, min_tokens=n, ignore_eos=True, temperature=0.0)

        engine.generate([reqs[0][0][:8]] * args.users, params(4))  # warm-up, as the adapter's: short, together
        mark("after warm-up")
        bm = engine.block_manager
        highest = peak_used = 0
        nxt = done = 0
        t0 = time.perf_counter()
        while done < len(reqs):
            while nxt < len(reqs) and len(engine.seqs) < args.users:
                engine.add_request(*[reqs[nxt][0]], params(reqs[nxt][1]))
                nxt += 1
            for _, _, finished in engine.step():
                if finished:
                    done += 1
                    if done % args.every == 0 or done == len(reqs):
                        mark(f"after {done} requests", highest_block_held=highest, peak_blocks_in_use=peak_used)
            used = ~bm.free
            peak_used = max(peak_used, int(used.sum()))
            if used.any():
                highest = max(highest, int(used.nonzero()[0].max()) + 1)
        result["serve_s"] = time.perf_counter() - t0
        result["steps"] = engine.num_steps

    def serve_or_record() -> None:
        try:
            serve()
        except BaseException as e:  # noqa: BLE001 - reported below, the stages so far kept
            result["error"] = f"{type(e).__name__}: {e}"

    t = threading.Thread(target=serve_or_record, name="own_engine")
    t.start()
    t.join()
    print(json.dumps({"config": vars(args), "requests": len(reqs), **result, "stages": stages}))
    if "error" in result:
        raise SystemExit(f"own_rss: {result['error']}")


if __name__ == "__main__":
    main()
