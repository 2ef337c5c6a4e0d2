"""CPU SDPA decode (the `sdpa-runs` route, issue 28): equal contexts as one call per sequence or one batched call.

    python benchmarks/decode_runs.py --threads 1      # CPU time of this thread: steady on a loaded machine
    python benchmarks/decode_runs.py --threads 2      # wall time: needs a quiet machine

Attention only, one layer, small-100m's head layout by default (12 query heads, 4 KV heads, head size 64,
blocks of 16), B sequences all at one context length, as the engines benchmark's decode has them. Each case in
two cache layouts:

- `in place`: every sequence's blocks form one run (what the block manager hands out while it can): one SDPA per
  sequence on views of the cache (`per_sequence`) against one SDPA over all of them gathered (`batched`, the
  call the engine made for equal contexts before issue 28);
- `scattered`: blocks out of order: one SDPA per sequence on its own gathered blocks against one over all
  gathered at once.

Both sides are `paged_attention.decode_attention_runs` on the same inputs (their outputs are checked equal);
rounds alternate the sides; the figure is the minimum over rounds of the mean us per call. Prints one JSON
document.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from own_engine.model.paged_attention import DecodeRun, decode_attention_runs  # noqa: E402


def sides(b: int, n: int, hq: int, hkv: int, d: int, bs: int, scattered: bool, gen: torch.Generator):
    nb = -(-n // bs)
    kc, vc = (torch.randn(b * nb + 4, bs, hkv, d, generator=gen) for _ in range(2))
    q = torch.randn(b, hq, d, generator=gen)
    order = torch.randperm(b * nb, generator=gen) if scattered else torch.arange(b * nb)
    tables = order.view(b, nb)
    if scattered:
        each = [DecodeRun(n, block_ids=tables[i]) for i in range(b)]
    else:
        kf, vf = kc.view(1, -1, hkv, d), vc.view(1, -1, hkv, d)
        each = [DecodeRun(n, k=kf[:, i * nb * bs:i * nb * bs + n].transpose(1, 2).unsqueeze(1),
                          v=vf[:, i * nb * bs:i * nb * bs + n].transpose(1, 2).unsqueeze(1)) for i in range(b)]
    batched = [DecodeRun(n, rows=b, block_ids=tables.reshape(-1))]
    return {"per_sequence": lambda: decode_attention_runs(0, q, kc, vc, each),
            "batched": lambda: decode_attention_runs(0, q, kc, vc, batched)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cases", default="1:128,4:128,8:128,8:512,16:256,64:128,64:512", help="B:context,...")
    ap.add_argument("--heads", default="12,4,64", help="query heads, KV heads, head size")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    hq, hkv, d = (int(x) for x in args.heads.split(","))
    gen = torch.Generator().manual_seed(0)
    rows = []
    for case in args.cases.split(","):
        b, n = (int(x) for x in case.split(":"))
        for scattered in (False, True):
            fns = sides(b, n, hq, hkv, d, 16, scattered, gen)
            torch.testing.assert_close(fns["per_sequence"](), fns["batched"](), atol=1e-5, rtol=1e-4)
            reps = max(2, 400 // b)
            best = {k: float("inf") for k in fns}
            with torch.inference_mode():
                for _ in range(args.rounds):
                    for k, f in fns.items():
                        t0 = clock()
                        for _ in range(reps):
                            f()
                        best[k] = min(best[k], (clock() - t0) / reps * 1e6)
            row = {"batch": b, "context": n, "layout": "scattered" if scattered else "in place",
                   **{f"{k}_us": round(v, 1) for k, v in best.items()},
                   "batched_over_per_sequence": round(best["batched"] / best["per_sequence"], 2)}
            rows.append(row)
            print(row, file=sys.stderr, flush=True)
    print(json.dumps({"threads": args.threads, "clock": clock.__name__, "heads": [hq, hkv, d], "cases": rows}))


if __name__ == "__main__":
    main()
