"""Where own_engine's time goes under a benchmark's load, with no client and no serving path (issue 12 part 4).

    python benchmarks/own_profile.py --run RUN_DIR --model PATH --users 8 --threads 2

Replays the measured requests of a run folder (`requests.parquet`, e.g. a `benchmarks/engines.py` cell): the
same prompt and output lengths, in the same order, as a closed loop of `--users` sequences driven straight
through `LLMEngine.step()` on this thread (EOS ignored, made-up prompt ids). Two passes over the same replay:

- timed, nothing else running: wall time, output and prompt tokens/s (set them beside the run's own figures:
  the difference is the client and the serving path), and the steps by kind: `prefill` (a step that carries
  prompt tokens, decodes riding along) and `decode` (one token per sequence only), count and mean ms;
- under `torch.profiler`: the self CPU time of every op, summed into linear layers, attention and everything
  else (norms, rope, activations, copies, the sampler), as shares of the total. The profiler slows small ops
  more than large ones, so read the shares, not its times.

The linears' FLOP rate is their FLOPs (2 x parameters x rows through each) / their profiled time (an upper
bound on the time: the profiler's own cost is in it, so the rate is a lower bound). Prints one JSON
document.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PANEL_OP = "own_engine::panel_linear"  # a range named around each PanelLinear call
LINEAR_OPS = (PANEL_OP, "mkldnn::_linear_pointwise", "aten::addmm", "aten::mm", "aten::linear", "aten::matmul")
ATTENTION_OPS = ("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::_scaled_dot_product_attention_math")


def load_requests(run_dir: Path) -> list[tuple[int, int]]:
    """(prompt tokens, output tokens) of the run's measured requests, in schedule order."""
    import pandas as pd

    path = run_dir / "requests.parquet"
    if not path.is_file():
        raise SystemExit(f"own_profile: no requests.parquet in {run_dir}: pass a run folder")
    df = pd.read_parquet(path, columns=["idx", "n_in", "n_out", "warmup", "error_kind"])
    df = df[~df.warmup & df.error_kind.isna()].sort_values("idx")
    return [(int(a), int(b)) for a, b in zip(df.n_in, df.n_out, strict=True) if b > 0]


def replay(engine, requests: list[tuple[int, int]], users: int) -> dict:
    """Closed loop: `users` sequences in flight, a finished one replaced by the next request at once."""
    from own_engine.core.sampling_params import SamplingParams

    vocab = engine.config.vocab_size
    nxt = 0

    def add() -> None:
        nonlocal nxt
        n_in, n_out = requests[nxt]
        engine.add_request([(7 + 13 * nxt + j) % (vocab - 3) + 3 for j in range(n_in)],
                           SamplingParams(max_tokens=n_out, ignore_eos=True))
        nxt += 1

    while nxt < min(users, len(requests)):
        add()
    kinds: dict[str, list[float]] = defaultdict(list)
    t0 = time.perf_counter()
    while engine.has_unfinished():
        prefill = any(s.num_completion_tokens == 0 for s in engine.seqs.values())
        t = time.perf_counter()
        outs = engine.step()
        kinds["prefill" if prefill else "decode"].append(time.perf_counter() - t)
        for _, _, finished in outs:
            if finished and nxt < len(requests):
                add()
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "output_tok_s": sum(o for _, o in requests) / wall,
            "prompt_tok_s": sum(i for i, _ in requests) / wall,
            "steps": {k: {"n": len(v), "mean_ms": 1e3 * sum(v) / len(v), "total_s": sum(v)} for k, v in kinds.items()}}


def op_shares(prof) -> dict:
    groups: Counter[str] = Counter()
    for e in prof.key_averages():
        group = "linears" if e.key in LINEAR_OPS else "attention" if e.key in ATTENTION_OPS else "other"
        groups[group] += e.self_cpu_time_total
    total = sum(groups.values())
    return {"total_s": total / 1e6, **{f"{g}_share": groups[g] / total for g in ("linears", "attention", "other")},
            "linears_s": groups["linears"] / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="a run folder whose measured requests are replayed")
    ap.add_argument("--model", required=True, help="the model folder the run used")
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-profile", action="store_true", help="the timed pass only")
    ap.add_argument("--linear-kernels", default="auto", choices=["auto", "panel", "onednn", "torch"])
    args = ap.parse_args()
    run_dir, model = Path(args.run), Path(args.model)
    if not model.is_dir():
        raise SystemExit(f"own_profile: no model folder at {model}")
    requests = load_requests(run_dir)

    import torch
    import torch.profiler as tp

    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.kernels.cpu_linear import PackedLinear
    from own_engine.kernels.panel_linear import PanelLinear
    from own_engine.model.llama import Linear

    engine = LLMEngine(EngineConfig(model, device="cpu", dtype="float32", threads=args.threads, linear_kernels=args.linear_kernels))
    replay(engine, requests[: args.users], args.users)  # warm-up: primitives for the common shapes
    out = {"run": str(run_dir), "model": str(model), "users": args.users, "threads": args.threads,
           "requests": len(requests), "torch": torch.__version__, "timed": replay(engine, requests, args.users)}
    out["linear_kernels"] = engine.linear_kernels
    if not args.no_profile:
        plain_forward = PanelLinear.forward

        def named_forward(self, x):  # a ctypes call is no torch op: name it, or the profiler can't see it
            with torch.profiler.record_function(PANEL_OP):
                return plain_forward(self, x)

        PanelLinear.forward = named_forward
        with tp.profile(activities=[tp.ProfilerActivity.CPU]) as prof:
            replay(engine, requests, args.users)
        shares = op_shares(prof)
        # decoder linears see every prompt token and every token fed back (all but the last of each output); the
        # LM head one row per sampled token
        sizes = {name: m.weight.shape.numel() if not isinstance(m, (PackedLinear, PanelLinear))
                 else m.in_features * m.out_features
                 for name, m in engine.model.named_modules() if isinstance(m, (Linear, PackedLinear, PanelLinear))}
        head = sizes.pop("lm_head", engine.model.embed_tokens.numel())
        flop = 2 * (sum(sizes.values()) * sum(i + o - 1 for i, o in requests) + head * sum(o for _, o in requests))
        shares["linears_gflops"] = flop / shares["linears_s"] / 1e9
        out["profiled"] = shares
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
