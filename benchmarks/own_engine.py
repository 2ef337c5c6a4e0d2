"""Benchmark own_engine: memory bandwidth, decode tokens/s vs batch size, prefill tokens/s, MBU.

    python benchmarks/own_engine.py --preset small-100m            # CPU: the ENGINE_NOTES shape
    python benchmarks/own_engine.py --preset llama-1b --hf-compare  # CUDA: bf16, plus transformers generate

Measures this machine's copy bandwidth first (large tensor copy, median), then
for each batch size the decode step time with every sequence at the same
context length and its host time (everything outside the forward: own_engine.core.step_clock), and prefill time per prompt length. MBU = bytes a decode step
must read (weights + KV context) / step time / measured bandwidth. Warm-up
before every timed run, device sync around every timer, medians over
--repeats; one JSON document is printed last. Static vs continuous batching on
the `bursty` scenario goes through the load generator, not this script.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.selftest.step import (  # noqa: E402  (shared with `advisor selftest`)
    decode_bytes_per_step,
    hf_generate_tok_s,
    measure_bandwidth_gbs,
    median_of,
    run_decode,
    sync,
)
from model_cache.create import create_model  # noqa: E402
from model_cache.paths import is_model_dir, models_root  # noqa: E402
from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine  # noqa: E402
from own_engine.core.sampling_params import SamplingParams  # noqa: E402


def run_prefill(engine: LLMEngine, prompt_len: int) -> float:
    vocab = engine.config.vocab_size
    engine.add_request([(11 + j) % (vocab - 3) + 3 for j in range(prompt_len)], SamplingParams(max_tokens=1))
    sync(engine.device)
    t = time.perf_counter()
    engine.step()
    sync(engine.device)
    dt = time.perf_counter() - t
    while engine.has_unfinished():
        engine.step()
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="small-100m")
    ap.add_argument("--model", default=None, help="model folder (default: the preset, created in the cache)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--batch-sizes", default="1,2,4,8,16,32,64")
    ap.add_argument("--context", type=int, default=128, help="prompt tokens per sequence before decode")
    ap.add_argument("--decode-steps", type=int, default=32)
    ap.add_argument("--prefill-lens", default="128,512")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--bandwidth-mb", type=int, default=1024)
    ap.add_argument("--hf-compare", action="store_true", help="also time transformers generate (default on CUDA)")
    ap.add_argument("--hf-batch-sizes", default="1,64")
    ap.add_argument("--linear-kernels", default="auto", choices=["auto", "panel", "onednn", "torch"],
                    help="CPU fp32: the linear kernel (own_engine.kernels.backends.choose), for comparison")
    args = ap.parse_args()

    path = Path(args.model) if args.model else models_root() / args.preset
    if not args.model and not is_model_dir(path):
        print(f"creating {args.preset} in {path}", file=sys.stderr)
        create_model(args.preset, args.preset)
    batches = [int(b) for b in args.batch_sizes.split(",")]
    engine = LLMEngine(EngineConfig(path, device=args.device, dtype=args.dtype, threads=args.threads,
                       max_num_seqs=max(batches), max_num_batched_tokens=max(batches) * args.context,
                       num_kv_blocks=max(batches) * -(-(args.context + args.decode_steps + 4) // 16) + 8,
                       linear_kernels=args.linear_kernels))
    dev = engine.device
    bw = measure_bandwidth_gbs(dev, args.bandwidth_mb, args.repeats)
    kernels = engine.describe()["linear_kernels"]
    print(f"device {dev}, {engine.precision}, linear kernels {kernels}, bandwidth {bw:.1f} GB/s", file=sys.stderr)

    decode = []
    for b in batches:
        host: list[dict] = []
        step_s = median_of(lambda b=b, host=host: run_decode(engine, b, args.context, args.decode_steps, host),
                           args.repeats)
        ctx = args.context + args.decode_steps // 2
        mbu = decode_bytes_per_step(engine, b, ctx) / step_s / (bw * 1e9)
        host_ms = {k: statistics.median(h[k] for h in host[1:]) for k in host[0]}  # host[0]: the warm-up call
        decode.append({"batch": b, "step_ms": step_s * 1e3, "tok_s": b / step_s, "mbu": mbu, **host_ms})
        print(f"decode batch {b:3d}: {b / step_s:9.1f} tok/s  step {step_s * 1e3:7.2f} ms  MBU {mbu:.0%}  "
              f"host {host_ms['host_ms']:.3f} ms (before forward {host_ms['host_before_ms']:.3f}, "
              f"sampling and output {host_ms['sample_output_ms']:.3f})", file=sys.stderr)
    prefill = []
    for n in (int(x) for x in args.prefill_lens.split(",")):
        s = median_of(lambda n=n: run_prefill(engine, n), args.repeats)
        prefill.append({"prompt_len": n, "ttft_ms": s * 1e3, "tok_s": n / s})
        print(f"prefill {n:5d} tokens: {n / s:9.1f} tok/s  ({s * 1e3:.1f} ms)", file=sys.stderr)

    hf = []
    if args.hf_compare or dev.type == "cuda":
        own = {d["batch"]: d["tok_s"] for d in decode}
        for b in (int(x) for x in args.hf_batch_sizes.split(",")):
            tok_s = hf_generate_tok_s(path, dev, engine.model.dtype, b, args.context, args.decode_steps,
                                      max(1, args.repeats // 2))
            hf.append({"batch": b, "hf_generate_tok_s": tok_s, "own_decode_tok_s": own.get(b),
                       "ratio": own[b] / tok_s if b in own else None})
            print(f"transformers generate batch {b}: {tok_s:.1f} tok/s", file=sys.stderr)

    from importlib.metadata import PackageNotFoundError, version

    try:
        hf_version = version("transformers")
    except PackageNotFoundError:
        hf_version = None
    doc = {
        "benchmark": "own_engine", "preset": args.preset, "model": str(path),
        "env": {"python": platform.python_version(), "torch": torch.__version__, "device": str(dev),
                "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else platform.processor(),
                "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
                "transformers": hf_version},
        "precision": engine.precision, "n_params": engine.model.n_params, "linear_kernels": kernels,
        "settings": {k: v for k, v in vars(args).items()},
        "bandwidth_gbs": bw, "decode": decode, "prefill": prefill, "hf_compare": hf,
    }
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
