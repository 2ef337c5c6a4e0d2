"""What overlap scheduling costs a new request: its first token, in steps and in ms, with overlap off and on.

    python benchmarks/overlap_ttft.py --device sim:h200 --model tiny --concurrency 64 --prompt-len 256 --output-len 128

`LLMEngine.step()` in a loop in this process (no front, no client), C requests kept in flight: a request that
finishes is replaced at once by a new one, as a closed-loop user with no think time does. For every request added
after the warm-up steps, its time to first token counted from `add_request` to the `step()` that returns its
first token, in steps and in ms, and the measured steps' wall times. Without overlap a request added after step n's tokens came back rides step n+1;
with overlap, step n+1 was launched before step n's tokens were known, so it rides step n+2 (docs/engines.md,
"Overlap scheduling"): the cost is the step it waits behind, whose length depends on what that step carries.

With `--output-len` fixed the requests stay in step: they finish, and come back, in groups of about
budget / prompt-len, so the steps around a group's return carry prompts. `--output-len lo-hi` draws each
request's output length uniformly (seeded), which breaks the groups up. One JSON document goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run(device: str, model: str, c: int, prompt_len: int, out_lens: tuple[int, int], duration_s: float,
        warm_steps: int, overlap: bool) -> dict:
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams

    engine = LLMEngine(EngineConfig(model, device=device, max_num_seqs=c, overlap=overlap))
    rng = random.Random(0)
    vocab = engine.config.vocab_size
    added: dict[int, tuple[int, float]] = {}
    first: dict[int, tuple[int, float]] = {}
    steps = 0

    def add() -> None:
        n = rng.randint(*out_lens)
        sid = engine.add_request([rng.randrange(3, vocab) for _ in range(prompt_len)],
                                 SamplingParams(max_tokens=n, min_tokens=n, ignore_eos=True))
        added[sid] = (steps, time.perf_counter())

    for _ in range(c):
        add()
    t_end = None
    step_ms: list[float] = []
    while t_end is None or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        outs = engine.step()
        steps += 1
        now = time.perf_counter()
        if t_end is not None:
            step_ms.append((now - t0) * 1e3)
        for sid, _, finished in outs:
            first.setdefault(sid, (steps, now))
            if finished:
                add()
        if t_end is None and steps >= warm_steps:
            t_end = now + duration_s
    measured = [sid for sid in first if added[sid][0] >= warm_steps]
    in_steps = np.array([first[s][0] - added[s][0] for s in measured])
    in_ms = np.array([(first[s][1] - added[s][1]) * 1e3 for s in measured])
    pcts = (50, 90, 95, 99)
    return {"overlap": engine.overlap, "requests": len(measured), "steps": steps, "threads": engine.num_threads,
            "step_ms": {"p50": round(float(np.percentile(step_ms, 50)), 2),
                        "p99_9": round(float(np.percentile(step_ms, 99.9)), 2), "max": round(max(step_ms), 2)},
            "ttft_steps": {f"p{p}": float(np.percentile(in_steps, p)) for p in pcts} if measured else {},
            "ttft_ms": {f"p{p}": round(float(np.percentile(in_ms, p)), 2) for p in pcts} if measured else {}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="sim:h200")
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--output-len", default="128", help="N, or LO-HI: drawn uniformly per request")
    ap.add_argument("--duration", type=float, default=6.0, help="measured seconds per setting")
    ap.add_argument("--warm-steps", type=int, default=300, help="steps before requests are measured")
    args = ap.parse_args()
    lo, _, hi = args.output_len.partition("-")
    try:
        out_lens = (int(lo), int(hi or lo))
    except ValueError:
        ap.error(f"--output-len {args.output_len!r}: give N or LO-HI, e.g. 128 or 16-240")
    if not 1 <= out_lens[0] <= out_lens[1]:
        ap.error(f"--output-len {args.output_len!r}: need 1 <= LO <= HI")
    rows = [run(args.device, args.model, args.concurrency, args.prompt_len, out_lens, args.duration,
                args.warm_steps, overlap) for overlap in (False, True)]
    for r in rows:
        print(f"overlap={r['overlap']}: {r['requests']} requests, TTFT in steps {r['ttft_steps']}, "
              f"ms {r['ttft_ms']}; step ms {r['step_ms']}", file=sys.stderr)
    print(json.dumps({"args": vars(args), "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
                      "rows": rows}))


if __name__ == "__main__":
    main()
