"""Embedding engines on all-MiniLM-L6-v2, one thread each: sentence-transformers fp32 against ONNX Runtime and OpenVINO
fp32 and int8 (advisor's conversion) and own_engine's encoder (own-embed, fp32), at batch 1 and 32 of
shipped-corpus chunks, with their quality drift.

Every engine is started once; then, per case, the engines take turns call by call (engine A, B, C, A, B, C, ...)
so a change in the shared machine's load falls on all of them alike. Times each adapter's own path
(`EmbedAdapter.embed`: tokenize, forward, the token count; sentence-transformers adds its pipe to its
engine process), called directly (no load generator), after 3 warm-up calls each; the median of --repeats
calls. Reports ms per call, inputs/s, and each engine's speed-up over sentence-transformers fp32 and over
ONNX Runtime fp32 (ratios of the medians). With --drift, `advisor verify`'s drift figures (advisor.embed.drift:
cosine to sentence-transformers fp32 per corpus chunk, recall@10 overlap per seeded query) follow. The load
average is printed beside each case: on a shared machine the figures are upper bounds on time.

    python benchmarks/embed_engines.py --model minilm --repeats 15 --drift
    python benchmarks/embed_engines.py --engines "own-embed fp32" --own-linears onednn   # own's linear kernels A/B
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

ENGINES = (("sentence-transformers fp32", "sentence-transformers", {}),
           ("onnxruntime fp32", "onnxruntime-embed", {"precision": "fp32"}),
           ("onnxruntime int8", "onnxruntime-embed", {"precision": "int8"}),
           ("openvino fp32", "openvino-embed", {"precision": "fp32"}),
           ("openvino int8", "openvino-embed", {"precision": "int8"}),
           ("own-embed fp32", "own-embed", {}))
OWN_LINEARS = ("panel", "onednn", "torch")  # --own-linears: own-embed once per linear kernel, beside the others
# embed-query's inputs (12 words) one at a time and in a batch, embed-ingest's (128 words) in its batch of 32
CASES = (("query: batch 1 x 12 words", 1, 12), ("batch 32 x 12 words", 32, 12), ("ingest: batch 32 x 128 words", 32, 128))


async def _timed(adapter: EmbedAdapter, req: EmbedRequest) -> float:
    t0 = time.perf_counter()
    await adapter.embed(req)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--drift", action="store_true", help="also the drift figures (minutes: the whole corpus per engine)")
    ap.add_argument("--engines", default=",".join(label for label, _, _ in ENGINES),
                    help="comma-separated labels to run (sentence-transformers fp32 always runs: the ratios' base)")
    ap.add_argument("--own-linears", default="", help=f"also own-embed with these linear kernels ({', '.join(OWN_LINEARS)})")
    a = ap.parse_args()
    wanted = {ENGINES[0][0], *a.engines.split(",")}
    unknown = sorted(wanted - {label for label, _, _ in ENGINES}) + sorted(set(a.own_linears.split(",")) - {"", *OWN_LINEARS})
    if unknown:
        ap.error(f"unknown engine label(s) or linear kernel(s): {', '.join(unknown)}")
    engines = [e for e in ENGINES if e[0] in wanted] + [
        (f"own-embed fp32 linears={k}", "own-embed", {"linear_kernels": k}) for k in a.own_linears.split(",") if k]
    started = []
    for label, name, opts in engines:
        adapter = embedders.create(name, a.model, {**opts, "threads": a.threads})
        started.append((label, adapter, adapter.start()))
    for case, batch, words in CASES:
        pool = chunks(words)
        reqs = [EmbedRequest(f"{i}", tuple(pool[(i * batch + j) % len(pool)] for j in range(batch)))
                for i in range(a.repeats + 3)]
        times: dict[str, list[float]] = {label: [] for label, _, _ in started}
        load0 = os.getloadavg()[0]
        for r in reqs:
            for label, adapter, _ in started:
                times[label].append(asyncio.run(_timed(adapter, r)))
        ms = {label: statistics.median(t[3:]) * 1e3 for label, t in times.items()}
        for label, _, info in started:
            print(json.dumps({"case": case, "engine": label, "version": info.version, "threads": a.threads,
                              **({"linears": info.extra["linear_kernels"]} if "linear_kernels" in info.extra else {}),
                              "batch": batch, "ms_per_call": round(ms[label], 2),
                              "inputs_per_s": round(batch / ms[label] * 1e3, 1),
                              "speedup_vs_st_fp32": round(ms[ENGINES[0][0]] / ms[label], 2),
                              "speedup_vs_ort_fp32": round(ms[ENGINES[1][0]] / ms[label], 2) if ENGINES[1][0] in ms else None,
                              "loadavg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)]}), flush=True)
    for _, adapter, _ in started:
        adapter.close()
    if a.drift:
        from advisor.embed.drift import run_drift

        report = run_drift(a.model, tuple((name, opts) for _, name, opts in engines[1:]), threads=2)
        for r in report.results:
            print(json.dumps({"drift": r.to_dict(), "chunk_words": report.chunk_words, "seed": report.seed}),
                  flush=True)
    print(json.dumps({"summary": {"model": a.model, "repeats": a.repeats, "cpus": len(os.sched_getaffinity(0)),
                                  "loadavg": os.getloadavg()}}))


if __name__ == "__main__":
    main()
