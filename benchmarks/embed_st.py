"""sentence-transformers on all-MiniLM-L6-v2 on this CPU: batch 1 and batch 32 of shipped-corpus chunks, per thread count.

Times the adapter's own path (`adapters.sentence_transformers_embed`: tokenize, forward, the token count),
called directly (no load generator), after 3 warm-up calls; the median of --repeats calls. Reports ms per
call, inputs/s and tokens/s (tokens as the model's tokenizer counts them, specials included). The machine's
load average is printed beside: on a shared machine the figures are upper bounds on time. One JSON line
per case, then a summary.

    python benchmarks/embed_st.py --model minilm --threads 1,2 --repeats 15
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters import embedders  # noqa: E402
from adapters.embed_base import EmbedAdapter, EmbedRequest  # noqa: E402
from scenarios.corpus import chunks  # noqa: E402

CASES = (("query: batch 1 x 12 words", 1, 12), ("chunk: batch 1 x 128 words", 1, 128),
         ("ingest: batch 32 x 12 words", 32, 12), ("ingest: batch 32 x 128 words", 32, 128))


async def _timed(adapter: EmbedAdapter, req: EmbedRequest) -> tuple[float, int]:
    """Seconds for one call, and its tokens."""
    t0 = time.perf_counter()
    res = await adapter.embed(req)
    return time.perf_counter() - t0, res.n_tokens or 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args()
    rows = []
    for threads in (int(t) for t in a.threads.split(",")):
        adapter = embedders.create("sentence-transformers", a.model, {"threads": threads})
        info = adapter.start()
        for label, batch, words in CASES:
            pool = chunks(words)
            reqs = [EmbedRequest(f"{i}", tuple(pool[(i * batch + j) % len(pool)] for j in range(batch)))
                    for i in range(a.repeats + 3)]
            out = [asyncio.run(_timed(adapter, r)) for r in reqs][3:]
            ms = statistics.median(t for t, _ in out) * 1e3
            tokens = statistics.mean(n for _, n in out)
            row = {"case": label, "threads": threads, "batch": batch, "ms_per_call": round(ms, 2),
                   "inputs_per_s": round(batch / ms * 1e3, 1), "tokens_per_s": round(tokens / ms * 1e3, 0),
                   "tokens_per_call": tokens, "engine": f"sentence-transformers {info.version}",
                   "loadavg_1m": round(os.getloadavg()[0], 2)}
            rows.append(row)
            print(json.dumps(row), flush=True)
        adapter.close()
    print(json.dumps({"summary": {"model": a.model, "repeats": a.repeats, "cpus": len(os.sched_getaffinity(0))}}))


if __name__ == "__main__":
    main()
