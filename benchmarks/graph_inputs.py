"""Host time of a CUDA-graph decode step's inputs (`DecodeGraphs.inputs`), against the way they were built before.

    python benchmarks/graph_inputs.py --batch-sizes 1,8,64 --context 1300 --repeats 2000

A replayed decode step's host work is its inputs (ids, positions, cache slots, context lengths, block tables,
padded to the graph's buckets), the replay's launch and the sampling; this times the inputs on the host, which
is the same code on CPU and GPU (the copy to the device is left out: one copy now, two before). `before` is the
code of commit 9d7a0c2 (`torch.tensor` on nested lists, then a tensor per row's block table), kept here as the
baseline; both are checked to give the same numbers first. Medians of --rounds rounds, alternated, of
--repeats calls each; one JSON document on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from own_engine.core.sampling_params import SamplingParams  # noqa: E402
from own_engine.core.sequence import Sequence  # noqa: E402
from own_engine.kernels.cuda_graph import DecodeGraphs  # noqa: E402


def before(seqs: list[Sequence], b: int, nb: int, block_size: int, dummy: int) -> torch.Tensor:
    """The inputs as commit 9d7a0c2 built them, flattened like `DecodeGraphs.inputs` for the comparison."""
    n, bs, pad = len(seqs), block_size, b - len(seqs)
    lens = [len(s) for s in seqs]
    host = torch.tensor([[s.last_token for s in seqs] + [0] * pad,
                         [x - 1 for x in lens] + [0] * pad,
                         [s.block_table[(x - 1) // bs] * bs + (x - 1) % bs for s, x in zip(seqs, lens, strict=True)]
                         + [dummy * bs] * pad,
                         lens + [1] * pad], dtype=torch.long)
    tables = torch.full((b, nb), dummy, dtype=torch.long)
    for i, s in enumerate(seqs):
        tables[i, : len(s.block_table)] = torch.tensor(s.block_table, dtype=torch.long)
    assert n <= b
    return torch.cat([host.flatten(), tables.flatten()])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-sizes", default="1,8,64")
    ap.add_argument("--context", type=int, default=1300, help="tokens per sequence (the H200 chat runs' ~1,300)")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    bs = args.block_size
    per_seq = -(-(args.context + 1) // bs)
    out = {"context": args.context, "block_size": bs, "rows": []}
    for batch in (int(x) for x in args.batch_sizes.split(",")):
        seqs = []
        for i in range(batch):
            s = Sequence(list(range(3, 3 + args.context)), SamplingParams(max_tokens=8))
            s.block_table = list(range(i * per_seq, (i + 1) * per_seq))
            s.num_computed_tokens = len(s) - 1
            seqs.append(s)
        dummy = batch * per_seq
        graphs = DecodeGraphs.__new__(DecodeGraphs)  # only the input builder: no model, no device buffers
        graphs.block_size, graphs.dummy_block = bs, dummy
        b = next(x for x in (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256) if x >= batch)
        nb = 1 << (per_seq - 1).bit_length()
        if not torch.equal(graphs.inputs(seqs, b, nb), before(seqs, b, nb, bs, dummy)):
            raise SystemExit(f"batch {batch}: the two builders disagree")
        times: dict[str, list[float]] = {"before": [], "now": []}
        for _ in range(args.rounds):
            for name, fn in (("before", partial(before, seqs, b, nb, bs, dummy)),
                             ("now", partial(graphs.inputs, seqs, b, nb))):
                t0 = time.perf_counter()
                for _ in range(args.repeats):
                    fn()
                times[name].append((time.perf_counter() - t0) / args.repeats * 1e6)
        row = {"batch": batch, "bucket": [b, nb], "before_us": round(statistics.median(times["before"]), 2),
               "now_us": round(statistics.median(times["now"]), 2)}
        row["now_over_before"] = round(row["now_us"] / row["before_us"], 3)
        out["rows"].append(row)
        print(f"batch {batch} (bucket {b} x {nb} blocks): before {row['before_us']} us, now {row['now_us']} us, "
              f"{row['now_over_before']}x", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
