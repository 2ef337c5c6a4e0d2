"""Quality drift of an embedding engine against the sentence-transformers fp32 reference, on the shipped corpus.

`advisor verify --model <an embedding model>` runs this (docs/metrics.md, "Embedding quality drift"). Every
corpus chunk (`scenarios.corpus.chunks(CHUNK_WORDS)`) and every query is embedded by the reference (the
`sentence-transformers` engine, fp32) and by each variant (an engine and its options) through the same
embed contract, in batches of `BATCH`. Queries are corpus-derived and seeded: `N_QUERIES` chunks drawn with
`random.Random(seed)`, from each a window of 4 to 8 consecutive words. Per variant:

- cosine of each chunk's vector to the reference's vector of the same chunk: min and mean;
- retrieval agreement: each query's top-`K` chunks by dot product (the variant's query vector against the
  variant's chunk vectors) overlapped with the reference's top-`K` (|both| / K): mean and min over queries.

The pure functions below take plain vectors, so a test can compute them by hand.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fileform import FileForm

CHUNK_WORDS = 64
N_QUERIES = 100
K = 10
BATCH = 32
REFERENCE = ("sentence-transformers", {})
# what each variant is run with: the in-process engines advisor converts, at every precision they offer, and
# own_engine's encoder (fp32, on the folder's own weights)
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("sentence-transformers", {}),
    ("onnxruntime-embed", {"precision": "fp32"}),
    ("onnxruntime-embed", {"precision": "int8"}),
    ("openvino-embed", {"precision": "fp32"}),
    ("openvino-embed", {"precision": "int8"}),
    ("own-embed", {}),
)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two [n, d] matrices."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"vectors of shape {a.shape} and {b.shape} cannot be compared row by row")
    return (a * b).sum(axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)


def top_k(queries: np.ndarray, docs: np.ndarray, k: int) -> np.ndarray:
    """[n_queries, k] indices of each query's k highest dot products, best first (ties: the lower index)."""
    scores = np.asarray(queries, dtype=np.float64) @ np.asarray(docs, dtype=np.float64).T
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def overlap_at_k(ref_top: np.ndarray, got_top: np.ndarray) -> np.ndarray:
    """Per query, the share of the reference's top-k that the variant's top-k also holds."""
    k = ref_top.shape[1]
    return np.array([len(set(r.tolist()) & set(g.tolist())) / k for r, g in zip(ref_top, got_top)])


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two score lists over the same items (1: same order, -1: reversed); ties counted as tau-b."""
    n = len(x)
    if n != len(y) or n < 2:
        raise ValueError(f"kendall_tau needs two lists of the same length >= 2, got {len(x)} and {len(y)}")
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = (x[i] > x[j]) - (x[i] < x[j])
            dy = (y[i] > y[j]) - (y[i] < y[j])
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif dx == dy:
                conc += 1
            else:
                disc += 1
    denom = ((conc + disc + tx) * (conc + disc + ty)) ** 0.5
    return (conc - disc) / denom if denom else 1.0


def queries_from(chunks: Sequence[str], n: int, seed: int) -> list[str]:
    """n short queries cut from the corpus: a seeded chunk each, a window of 4-8 consecutive words."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = chunks[rng.randrange(len(chunks))].split()
        w = min(len(words), rng.randint(4, 8))
        start = rng.randrange(len(words) - w + 1)
        out.append(" ".join(words[start:start + w]))
    return out


@dataclass(frozen=True)
class EmbedDrift(FileForm):
    engine: str
    options: dict[str, Any]
    precision: str
    status: str  # "ok", or "error" with the reason in `error`
    n_chunks: int = 0
    n_queries: int = 0
    k: int = K
    cosine_min: float | None = None
    cosine_mean: float | None = None
    recall_overlap_mean: float | None = None  # mean over queries of |top-k both| / k
    recall_overlap_min: float | None = None
    error: str | None = None
    engine_version: str | None = None


@dataclass(frozen=True)
class EmbedDriftReport:
    model: str
    reference: str
    chunk_words: int
    seed: int
    results: list[EmbedDrift] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (--json output, never read back)
        return {"task": "embed", "model": self.model, "reference": self.reference, "chunk_words": self.chunk_words,
                "seed": self.seed, "quality_drift": [r.to_dict() for r in self.results]}


def compare(ref_chunks: np.ndarray, ref_queries: np.ndarray, chunks: np.ndarray, queries: np.ndarray,
            k: int = K) -> dict[str, float]:
    """The drift figures of one variant's vectors against the reference's (same rows, same order)."""
    cos = cosines(chunks, ref_chunks)
    ov = overlap_at_k(top_k(ref_queries, ref_chunks, k), top_k(queries, chunks, k))
    return {"cosine_min": float(cos.min()), "cosine_mean": float(cos.mean()),
            "recall_overlap_mean": float(ov.mean()), "recall_overlap_min": float(ov.min())}


def _embed_all(engine: str, model: str, options: dict[str, Any], texts: list[str]) -> tuple[np.ndarray, Any]:
    from adapters import embedders
    from adapters.embed_base import EmbedRequest

    a = embedders.create(engine, model, options)
    info = a.start()
    try:
        async def go() -> list[tuple[float, ...]]:
            out: list[tuple[float, ...]] = []
            for i in range(0, len(texts), BATCH):
                res = await a.embed(EmbedRequest(f"drift-{i}", tuple(texts[i:i + BATCH]), return_vectors=True))
                assert res.vectors is not None
                out += res.vectors
            await a.aclose()
            return out

        return np.asarray(asyncio.run(go()), dtype=np.float64), info
    finally:
        a.close()


def run_drift(model: str, variants: Sequence[tuple[str, dict[str, Any]]] = VARIANTS, threads: int | None = None,
              seed: int = 0, n_queries: int = N_QUERIES, chunk_words: int = CHUNK_WORDS) -> EmbedDriftReport:
    """Embed the corpus and the queries with the reference and each variant; one EmbedDrift per variant.

    The reference failing raises (nothing to compare against); a variant failing is an "error" row."""
    from adapters.base import AdapterError, EngineUnavailable
    from adapters.embedders import why_unavailable
    from scenarios.corpus import chunks as corpus_chunks

    docs = list(corpus_chunks(chunk_words))
    qs = queries_from(docs, n_queries, seed)
    texts = docs + qs
    opts = {"threads": threads} if threads else {}
    ref, _ = _embed_all(REFERENCE[0], model, {**REFERENCE[1], **opts}, texts)
    ref_docs, ref_q = ref[:len(docs)], ref[len(docs):]
    results = []
    for engine, options in variants:
        precision = str(options.get("precision", "fp32"))
        why = why_unavailable(engine)
        if why is not None:
            results.append(EmbedDrift(engine, dict(options), precision, "error", error=why))
            continue
        try:
            vecs, info = _embed_all(engine, model, {**options, **opts}, texts)
        except (EngineUnavailable, AdapterError) as e:
            results.append(EmbedDrift(engine, dict(options), precision, "error", error=str(e)))
            continue
        figures = compare(ref_docs, ref_q, vecs[:len(docs)], vecs[len(docs):])
        results.append(EmbedDrift(engine, dict(options), precision, "ok", len(docs), len(qs), K, **figures,
                                  engine_version=info.version))
    return EmbedDriftReport(str(model), f"{REFERENCE[0]} fp32", chunk_words, seed, results)
