"""Quality drift of a rerank engine against the sentence-transformers CrossEncoder fp32 reference, on the shipped corpus.

`advisor verify --model <a cross-encoder>` runs this (docs/metrics.md, "Rerank quality drift"). The passages are
the corpus in chunks of `PASSAGE_WORDS` words (the `rerank` scenario's); `N_QUERIES` seeded cases each hold a
query (a 4-8 word window of a seeded chunk, as `advisor.embed.drift.queries_from` cuts them) and `CANDIDATES`
seeded passages that include the query's own chunk. Each case is one rerank request (the query and its
candidates, as the engines are used) to the reference (`sentence-transformers-rerank`, fp32) and to each
variant. Per variant:

- top-k agreement: per case, the share of the reference's top `K` candidates (by score) that the variant's
  top `K` also holds: mean and min over cases;
- Kendall's tau-b of the variant's scores against the reference's over the case's candidates: mean and min;
- the largest absolute difference of any score (sigmoid scores in [0, 1]) from the reference's.

The pure functions take plain score lists, so a test can compute them by hand.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from advisor.embed.drift import kendall_tau, overlap_at_k

PASSAGE_WORDS = 96
N_QUERIES = 20
CANDIDATES = 50
K = 10
REFERENCE = ("sentence-transformers-rerank", {})
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("sentence-transformers-rerank", {}),
    ("onnxruntime-rerank", {"precision": "fp32"}),
    ("onnxruntime-rerank", {"precision": "int8"}),
    ("openvino-rerank", {"precision": "fp32"}),
    ("openvino-rerank", {"precision": "int8"}),
)


def rerank_cases(chunks: Sequence[str], n: int, candidates: int, seed: int) -> list[tuple[str, list[int]]]:
    """n seeded (query, candidate chunk indices): a 4-8 word window of one chunk, and `candidates` chunks holding it."""
    if not K <= candidates <= len(chunks):
        raise ValueError(f"candidates must be between {K} and the {len(chunks)} corpus chunks, got {candidates}")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        src = rng.randrange(len(chunks))
        words = chunks[src].split()
        w = min(len(words), rng.randint(4, 8))
        start = rng.randrange(len(words) - w + 1)
        others = rng.sample([i for i in range(len(chunks)) if i != src], candidates - 1)
        others.insert(rng.randrange(candidates), src)
        out.append((" ".join(words[start:start + w]), others))
    return out


def top_by_score(scores: Sequence[float], k: int) -> np.ndarray:
    """The indices of the k highest scores, best first (ties: the lower index)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")[:k]


def compare(ref: Sequence[Sequence[float]], got: Sequence[Sequence[float]], k: int = K) -> dict[str, float]:
    """The drift figures of one variant's scores against the reference's (same cases, same candidate order)."""
    if len(ref) != len(got) or any(len(r) != len(g) for r, g in zip(ref, got)):
        raise ValueError("the variant's scores do not cover the reference's cases and candidates one for one")
    ov = overlap_at_k(np.array([top_by_score(r, k) for r in ref]), np.array([top_by_score(g, k) for g in got]))
    tau = np.array([kendall_tau(list(r), list(g)) for r, g in zip(ref, got)])
    diff = max(float(np.abs(np.asarray(r, dtype=np.float64) - np.asarray(g, dtype=np.float64)).max())
               for r, g in zip(ref, got))
    return {"topk_overlap_mean": float(ov.mean()), "topk_overlap_min": float(ov.min()),
            "kendall_tau_mean": float(tau.mean()), "kendall_tau_min": float(tau.min()), "score_max_abs_diff": diff}


@dataclass(frozen=True)
class RerankDrift:
    engine: str
    options: dict[str, Any]
    precision: str
    status: str  # "ok", or "error" with the reason in `error`
    n_queries: int = 0
    candidates: int = 0
    k: int = K
    topk_overlap_mean: float | None = None  # mean over queries of |top-k both| / k
    topk_overlap_min: float | None = None
    kendall_tau_mean: float | None = None  # Kendall's tau-b of the scores over each query's candidates
    kendall_tau_min: float | None = None
    score_max_abs_diff: float | None = None
    error: str | None = None
    engine_version: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RerankDriftReport:
    model: str
    reference: str
    passage_words: int
    candidates: int
    seed: int
    results: list[RerankDrift] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"task": "rerank", "model": self.model, "reference": self.reference,
                "passage_words": self.passage_words, "candidates": self.candidates, "k": K, "seed": self.seed,
                "quality_drift": [r.to_dict() for r in self.results]}


def _score_all(engine: str, model: str, options: dict[str, Any], cases: list[tuple[str, list[int]]],
               docs: Sequence[str]) -> tuple[list[tuple[float, ...]], Any]:
    from adapters import embedders
    from adapters.embed_base import EmbedRequest

    a = embedders.create(engine, model, options)
    info = a.start()
    try:
        async def go() -> list[tuple[float, ...]]:
            out = []
            for i, (query, idx) in enumerate(cases):
                res = await a.embed(EmbedRequest(f"rerank-drift-{i}", tuple(docs[j] for j in idx),
                                                 return_vectors=True, query=query))
                assert res.scores is not None and len(res.scores) == len(idx)
                out.append(res.scores)
            await a.aclose()
            return out

        return asyncio.run(go()), info
    finally:
        a.close()


def run_rerank_drift(model: str, variants: Sequence[tuple[str, dict[str, Any]]] = VARIANTS,
                     threads: int | None = None, seed: int = 0, n_queries: int | None = None,
                     candidates: int | None = None, passage_words: int | None = None) -> RerankDriftReport:
    """Rerank the seeded cases with the reference and each variant; one RerankDrift per variant.

    The reference failing raises (nothing to compare against); a variant failing is an "error" row."""
    from adapters.base import AdapterError, EngineUnavailable
    from adapters.embedders import why_unavailable
    from scenarios.corpus import chunks as corpus_chunks

    n_queries = N_QUERIES if n_queries is None else n_queries
    candidates = CANDIDATES if candidates is None else candidates
    passage_words = PASSAGE_WORDS if passage_words is None else passage_words
    docs = corpus_chunks(passage_words)
    cases = rerank_cases(docs, n_queries, candidates, seed)
    opts = {"threads": threads} if threads else {}
    ref, _ = _score_all(REFERENCE[0], model, {**REFERENCE[1], **opts}, cases, docs)
    results = []
    for engine, options in variants:
        precision = str(options.get("precision", "fp32"))
        why = why_unavailable(engine)
        if why is not None:
            results.append(RerankDrift(engine, dict(options), precision, "error", error=why))
            continue
        try:
            scores, info = _score_all(engine, model, {**options, **opts}, cases, docs)
        except (EngineUnavailable, AdapterError) as e:
            results.append(RerankDrift(engine, dict(options), precision, "error", error=str(e)))
            continue
        results.append(RerankDrift(engine, dict(options), precision, "ok", len(cases), candidates, K,
                                   **compare(ref, scores), engine_version=info.version))
    return RerankDriftReport(str(model), f"{REFERENCE[0]} fp32", passage_words, candidates, seed, results)
