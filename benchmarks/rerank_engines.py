"""Rerank engines on a seeded cross-encoder of MiniLM-L6's shape, one thread each: sentence-transformers CrossEncoder fp32
against ONNX Runtime and OpenVINO fp32 and int8 (advisor's conversion), with their rerank drift.

There is no trained cross-encoder in the model registry, so the model is made here, seeded, beside --out: MiniLM-L6's
shape (6 layers, 384 wide, 512 positions) and its WordPiece tokenizer (from the `minilm` model folder), one label.
`--encoder random` (default) draws every weight at random (`torch.manual_seed(0)`); `--encoder minilm` takes
all-MiniLM-L6-v2's trained encoder and draws only the pooler and the classifier, so the activations that int8
rounds are a trained model's. Neither is a trained reranker: the speed is a real MiniLM-L6 reranker's (the same
shapes and tokens), the drift is only what quantising these weights moves.

Each engine is started once; then, per case, the engines take turns call by call so a change in the shared
machine's load falls on all of them alike. Each call is one rerank request (`EmbedAdapter.embed` with a query:
tokenize the pairs, forward, the token count; sentence-transformers adds its pipe to its engine process), after
3 warm-up calls; the median of --repeats calls. Reports ms per call, passages/s, and the speed-up over
sentence-transformers fp32 and over ONNX Runtime fp32 (ratios of the medians). With --drift, `advisor verify`'s
rerank drift figures (advisor.embed.rerank_drift) follow. The load average is printed beside each case.

    python benchmarks/rerank_engines.py --repeats 7 --drift
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

ENGINES = (("sentence-transformers fp32", "sentence-transformers-rerank", {}),
           ("onnxruntime fp32", "onnxruntime-rerank", {"precision": "fp32"}),
           ("onnxruntime int8", "onnxruntime-rerank", {"precision": "int8"}),
           ("openvino fp32", "openvino-rerank", {"precision": "fp32"}),
           ("openvino int8", "openvino-rerank", {"precision": "int8"}))
# (label, passages per request, passage words): the `rerank` scenario's request, and a short one
CASES = (("rerank scenario: 12-word query x 50 passages x 96 words", 50, 96), ("10 passages x 32 words", 10, 32))


def make_cross_encoder(out: Path, encoder: str) -> Path:
    """A seeded one-label BertForSequenceClassification of MiniLM-L6's shape with its tokenizer, saved at `out`."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from model_cache.resolve import resolve_model

    minilm = resolve_model("minilm")
    torch.manual_seed(0)
    if encoder == "minilm":
        model = BertForSequenceClassification.from_pretrained(str(minilm), num_labels=1)
    else:
        model = BertForSequenceClassification(BertConfig.from_pretrained(str(minilm), num_labels=1))
    model.config.architectures = ["BertForSequenceClassification"]
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(str(minilm)).save_pretrained(out)
    return out


async def _timed(adapter: EmbedAdapter, req: EmbedRequest) -> float:
    t0 = time.perf_counter()
    await adapter.embed(req)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", choices=("random", "minilm"), default="random")
    ap.add_argument("--out", type=Path, default=Path("/tmp/advisor-rerank-bench"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--drift", action="store_true", help="also the drift figures (minutes: 1,000 pairs per engine)")
    a = ap.parse_args()
    model = a.out / f"ce-{a.encoder}"
    if not (model / "config.json").is_file():
        make_cross_encoder(model, a.encoder)
    started = []
    for label, name, opts in ENGINES:
        adapter = embedders.create(name, str(model), {**opts, "threads": a.threads})
        started.append((label, adapter, adapter.start()))
    queries = chunks(12)
    for case, n, words in CASES:
        pool = chunks(words)
        reqs = [EmbedRequest(f"{i}", tuple(pool[(i * n + j) % len(pool)] for j in range(n)), query=queries[i])
                for i in range(a.repeats + 3)]
        times: dict[str, list[float]] = {label: [] for label, _, _ in started}
        load0 = os.getloadavg()[0]
        for r in reqs:
            for label, adapter, _ in started:
                times[label].append(asyncio.run(_timed(adapter, r)))
        ms = {label: statistics.median(t[3:]) * 1e3 for label, t in times.items()}
        for label, _, info in started:
            print(json.dumps({"case": case, "engine": label, "version": info.version, "threads": a.threads,
                              "passages": n, "ms_per_call": round(ms[label], 2),
                              "passages_per_s": round(n / ms[label] * 1e3, 1),
                              "speedup_vs_st_fp32": round(ms[ENGINES[0][0]] / ms[label], 2),
                              "speedup_vs_ort_fp32": round(ms[ENGINES[1][0]] / ms[label], 2),
                              "loadavg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)]}), flush=True)
    for _, adapter, _ in started:
        adapter.close()
    if a.drift:
        from advisor.embed.rerank_drift import run_rerank_drift

        report = run_rerank_drift(str(model), tuple((name, opts) for _, name, opts in ENGINES[1:]), threads=2)
        for r in report.results:
            print(json.dumps({"drift": r.to_dict(), "passage_words": report.passage_words,
                              "candidates": report.candidates, "seed": report.seed}), flush=True)
    print(json.dumps({"summary": {"model": str(model), "encoder": a.encoder, "repeats": a.repeats,
                                  "cpus": len(os.sched_getaffinity(0)), "loadavg": os.getloadavg()}}))


if __name__ == "__main__":
    main()
