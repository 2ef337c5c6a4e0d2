"""What one engine step costs when it carries a prompt beside running decodes, against the same decodes alone.

    python benchmarks/mixed_step.py --preset tiny --device cpu --batch 8 --context 256 --prompt-lens 64,256
    python benchmarks/mixed_step.py --preset llama-1b --device cuda --batch 48 --context 1300 --profile

Why: on the H200 (shared/gpu-runs/h200-2026-11-26, rebuilt step by step with benchmarks/engine_steps.py)
every served step that carried a prompt took 90-100 ms, whatever the prompt's length (200-2,000 tokens)
and the decodes beside it (2-64), while a decode-only step took 2.5-11 ms and the bare prefill of 1,024
tokens 7.6 ms. Those steps were 7-19% of the steps and 48-72% of the wall time. This script times, on
one engine with `--batch` sequences decoding at `--context` tokens:

- `decode`: a decode-only step (a CUDA-graph replay on CUDA, when graphs are on);
- `decode_eager`: the same step with the graphs set aside (CUDA only: what a step pays for running eagerly);
- `mixed P`: the step that also carries a fresh prompt of about P tokens (eager on CUDA, as every step with a
  prompt is), a new length each time (P + 1, P + 2, ...: served prompts differ, so a cost paid per new shape shows);
  the prompt is then aborted so the batch stays as it was;
- `mixed P, cuDNN SDPA allowed` (CUDA only): the same with SDPA free to take cuDNN's attention, which own_engine
  forbids (own_engine.model.attention.CUDNN_SDPA: cuDNN builds a plan per new shape); the A/B of that choice;
- `prefill P`: the prompt alone (`--batch` decodes paused: run on a second engine with no other sequence).

Each is the median of `--repeats` timings with a device sync around the timer, with the step clock's parts
(own_engine.core.step_clock: host before the forward, forward, sampling and output). `--profile` adds
torch.profiler's top operators of one mixed step, by self device time and by self CPU time, to stderr. One
JSON document goes to stdout. Runs on any device; on CPU it checks the script, not a GPU's behaviour.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.selftest.step import sync  # noqa: E402
from model_cache.create import create_model  # noqa: E402
from model_cache.paths import is_model_dir, models_root  # noqa: E402
from own_engine.core.engine_config import EngineConfig  # noqa: E402
from own_engine.core.llm_engine import LLMEngine  # noqa: E402
from own_engine.core.sampling_params import SamplingParams  # noqa: E402
from own_engine.model import attention  # noqa: E402

PARTS = ("host_before", "forward", "sample_output")


def prompt(vocab: int, n: int, salt: int) -> list[int]:
    return [(7 + 13 * salt + j) % (vocab - 3) + 3 for j in range(n)]


def timed_step(engine: LLMEngine) -> dict[str, float]:
    """One engine.step(), synced on both sides: its ms and its step-clock parts in ms."""
    before = dict(engine.clock.totals_ns)
    sync(engine.device)
    t = time.perf_counter()
    engine.step()
    sync(engine.device)
    out = {"step_ms": (time.perf_counter() - t) * 1e3}
    out.update({f"{k}_ms": (engine.clock.totals_ns[k] - before[k]) / 1e6 for k in PARTS})
    return out


def median_parts(samples: list[dict[str, float]]) -> dict[str, float]:
    return {k: round(statistics.median(s[k] for s in samples), 3) for k in samples[0]}


def build(path: Path, args: argparse.Namespace, max_prompt: int) -> LLMEngine:
    ctx = args.context + (args.repeats + 2) * (4 + 2 * len(args.prompt_lens.split(","))) + 64
    max_prompt += 2 * args.repeats * len(args.prompt_lens.split(",")) + 8  # each timed prompt a new length
    blocks = (args.batch + 1) * -(-max(ctx, max_prompt + 8) // 16) + 16
    return LLMEngine(EngineConfig(path, device=args.device, dtype=args.dtype, threads=args.threads, max_num_seqs=args.batch + 1,
                     max_num_batched_tokens=max(args.batch * args.context, args.batch + max_prompt),
                     num_kv_blocks=blocks, max_model_len=max(ctx, max_prompt + 8) + 16))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--model", default=None, help="model folder (default: the preset, created in the cache)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--batch", type=int, default=32, help="sequences decoding beside the prompt")
    ap.add_argument("--context", type=int, default=1024, help="their context length when timing starts")
    ap.add_argument("--prompt-lens", default="128,1024")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="torch.profiler's top operators of one mixed step")
    args = ap.parse_args(argv)
    lens = [int(x) for x in args.prompt_lens.split(",")]
    if args.batch < 1 or args.context < 1 or args.repeats < 1 or min(lens) < 1:
        print("mixed_step: --batch, --context, --repeats and every prompt length must be >= 1", file=sys.stderr)
        return 2

    path = Path(args.model) if args.model else models_root() / args.preset
    if not args.model and not is_model_dir(path):
        print(f"creating {args.preset} in {path}", file=sys.stderr)
        create_model(args.preset, args.preset)
    engine = build(path, args, max(lens))
    vocab = engine.config.vocab_size
    long = SamplingParams(max_tokens=engine.max_model_len - args.context, ignore_eos=True)
    for i in range(args.batch):
        engine.add_request(prompt(vocab, args.context, i), long)
    while any(s.num_completion_tokens == 0 for s in engine.seqs.values()):  # every sequence decoding
        engine.step()
    for _ in range(2):  # warm-up decode steps
        engine.step()

    rows: dict[str, dict[str, float]] = {}
    rows["decode"] = median_parts([timed_step(engine) for _ in range(args.repeats)])
    graphs = getattr(engine.runner, "graphs", None)
    if graphs is not None and engine.device.type == "cuda":
        engine.runner.graphs = None
        engine.step()  # warm-up of the eager shapes
        rows["decode_eager"] = median_parts([timed_step(engine) for _ in range(args.repeats)])
        engine.runner.graphs = graphs

    def mixed(n: int, salt: int) -> dict[str, float]:
        seq_id = engine.add_request(prompt(vocab, n, 1000 + salt), SamplingParams(max_tokens=2, ignore_eos=True))
        out = timed_step(engine)
        engine.abort(seq_id)
        engine.step()  # a decode-only step between, as in serving
        return out

    lengths = iter(range(1, 1 << 20))  # every timed prompt a length not seen before

    for n in lens:
        mixed(n, -1)  # warm-up near this shape
        rows[f"mixed {n}"] = median_parts([mixed(n + next(lengths), r) for r in range(args.repeats)])
    if engine.device.type == "cuda":
        attention.CUDNN_SDPA = True
        try:
            for n in lens:
                rows[f"mixed {n}, cuDNN SDPA allowed"] = median_parts([mixed(n + next(lengths), r)
                                                                       for r in range(args.repeats)])
        finally:
            attention.CUDNN_SDPA = False
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if engine.device.type == "cuda" else [])
        with profile(activities=acts) as prof:
            mixed(lens[-1], 99)
        key = "self_cuda_time_total" if engine.device.type == "cuda" else "self_cpu_time_total"
        print(f"--- one mixed step ({args.batch} decodes + {lens[-1]} prompt tokens), top by {key}", file=sys.stderr)
        print(prof.key_averages().table(sort_by=key, row_limit=15), file=sys.stderr)
        if key != "self_cpu_time_total":
            print("--- the same step, top by self CPU time", file=sys.stderr)
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15), file=sys.stderr)

    for seq_id in list(engine.seqs):
        engine.abort(seq_id)
    for n in lens:  # the prompt alone, on the now empty engine
        def alone(salt: int, n: int = n) -> dict[str, float]:
            seq_id = engine.add_request(prompt(vocab, n, 2000 + salt), SamplingParams(max_tokens=2, ignore_eos=True))
            out = timed_step(engine)
            engine.abort(seq_id)
            return out

        alone(-1)
        rows[f"prefill {n}"] = median_parts([alone(r) for r in range(args.repeats)])

    for name, r in rows.items():
        print(f"{name:>32}: step {r['step_ms']:9.3f} ms (host before {r['host_before_ms']:.3f}, forward "
              f"{r['forward_ms']:.3f}, sampling and output {r['sample_output_ms']:.3f})", file=sys.stderr)
    doc = {"benchmark": "mixed_step", "preset": args.preset, "model": str(path),
           "env": {"python": platform.python_version(), "torch": torch.__version__, "device": str(engine.device),
                   "device_name": torch.cuda.get_device_name(engine.device) if engine.device.type == "cuda"
                   else platform.processor(), "threads": torch.get_num_threads()},
           "precision": engine.precision, "cuda_graphs": graphs is not None,
           "settings": vars(args), "steps_ms": rows}
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
