"""Does an own_engine option change the tokens, and what does it do to an offline run's time? A/B, alternated.

    python benchmarks/same_tokens.py --model llama-1b --device cuda --option overlap --values false,true
    python benchmarks/same_tokens.py --model llama-1b --device cuda --option decode_attention --values sdpa,triton

The same random prompts (seeded; lengths up to --longest, capped by the model's context) run offline through
`LLMEngine.generate` with each value of the option, twice over in turn (A, B, A, B). One JSON line per run:
wall time, steps, the step breakdown (own_engine.core.step_clock), and the share of tokens equal to the first
value's, position by position (bf16 on a GPU can flip a near-tie; greedy on CPU fp32 should give 1.0).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine  # noqa: E402
from own_engine.core.sampling_params import SamplingParams  # noqa: E402


def parse_value(text: str) -> object:
    return {"true": True, "false": False}.get(text.lower(), text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--option", required=True, help="an LLMEngine keyword: overlap, decode_attention, ...")
    ap.add_argument("--values", required=True, help="two or more values, comma-separated (true/false for flags)")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--longest", type=int, default=1500, help="longest prompt, tokens")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--max-num-seqs", type=int, default=64)
    ap.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE", help="another LLMEngine keyword, fixed")
    args = ap.parse_args()
    values = [parse_value(v) for v in args.values.split(",")]
    if len(values) < 2:
        raise SystemExit("--values needs two or more values, e.g. --values false,true")
    fixed = {k: parse_value(v) for k, v in (kv.split("=", 1) for kv in args.opt)}
    rng = random.Random(0)
    first: list[list[int]] | None = None
    prompts: list[list[int]] = []
    for value in values * 2:
        engine = LLMEngine(EngineConfig(args.model, device=args.device, max_num_seqs=args.max_num_seqs,
                           **{**fixed, args.option: value}))
        if not prompts:
            longest = max(2, min(args.longest, engine.max_model_len - args.max_tokens))
            prompts = [[rng.randrange(3, engine.config.vocab_size) for _ in range(rng.randrange(1, longest))]
                       for _ in range(args.prompts)]
        t0 = time.perf_counter()
        ids = engine.generate(prompts, SamplingParams(max_tokens=args.max_tokens, ignore_eos=True))
        wall_s = time.perf_counter() - t0
        first = first or ids
        same = sum(a == b for x, y in zip(first, ids, strict=True) for a, b in zip(x, y)) / sum(map(len, ids))
        print(json.dumps({args.option: value, "wall_s": round(wall_s, 3), "steps": engine.num_steps,
                          "tokens_equal_to_first": round(same, 4),
                          **{k: round(v, 4) for k, v in engine.stats().items() if k.startswith("step_")}}),
              flush=True)


if __name__ == "__main__":
    main()
