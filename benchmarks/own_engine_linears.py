"""A/B of own_engine's CPU linear kernels: its own packed kernel (`own_engine.kernels.panel_linear`), oneDNN packed
weights (`own_engine.kernels.cpu_linear`) and plain F.linear.

    python benchmarks/own_engine_linears.py --preset small-100m --threads 2

One engine per kernel on the same model in one process (the own kernel only where it builds), timed in
turns (torch, onednn, panel, torch, ...) so outside load hits all alike: seconds per decode step at each
batch size (every sequence at --context tokens) and one prefill of
--prefill-len tokens; medians over --repeats. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path

# this folder holds a script named own_engine.py: the package must win the import
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model_cache.paths import models_root  # noqa: E402
from own_engine.core.engine_config import EngineConfig  # noqa: E402
from own_engine.core.llm_engine import LLMEngine  # noqa: E402

_spec = importlib.util.spec_from_file_location("own_engine_bench", Path(__file__).with_name("own_engine.py"))
assert _spec is not None and _spec.loader is not None
_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench)


def _panel_builds() -> bool:
    from own_engine.kernels.backends import native_kernels

    return not isinstance(native_kernels(), str)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="small-100m")
    ap.add_argument("--model", help="model folder (default: the preset in the cache)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-sizes", default="1,8")
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--decode-steps", type=int, default=16)
    ap.add_argument("--prefill-len", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    path = Path(args.model) if args.model else models_root() / args.preset
    batches = [int(b) for b in args.batch_sizes.split(",")]
    blocks = max(batches) * -(-(args.context + args.decode_steps + 4) // 16) + 8
    engines = {kind: LLMEngine(EngineConfig(path, device="cpu", threads=args.threads, max_num_seqs=max(batches),
                               max_num_batched_tokens=max(max(batches) * args.context, args.prefill_len),
                               num_kv_blocks=blocks, linear_kernels=kind))
               for kind in ("torch", "onednn", "panel") if kind != "panel" or _panel_builds()}
    kernels = {kind: e.describe()["linear_kernels"] for kind, e in engines.items()}
    out: dict = {"model": str(path), "threads": args.threads, "kernels": kernels, "decode_step_ms": {},
                 "settings": vars(args)}
    for b in batches:
        times: dict[str, list[float]] = {k: [] for k in engines}
        for _ in range(args.repeats):
            for kind, e in engines.items():
                times[kind].append(_bench.run_decode(e, b, args.context, args.decode_steps))
        out["decode_step_ms"][b] = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    times = {k: [] for k in engines}
    for _ in range(args.repeats):
        for kind, e in engines.items():
            times[kind].append(_bench.run_prefill(e, args.prefill_len))
    out["prefill_ms"] = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
