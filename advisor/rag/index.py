"""The pipeline's vector index: the corpus passages embedded once, searched by exact cosine similarity.

Exact, not approximate: every search scores the question against every passage (one numpy matrix-vector
product over unit vectors) and keeps the `k` best, ties broken by the lower passage number, so a search
returns exactly what a brute-force scan does and the search stage's time is that of an exact scan. An
approximate index (FAISS, HNSW) would be faster on large collections and would trade recall for it;
the shipped corpus (hundreds of passages) does not need one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BUILD_BATCH = 32  # passages per embed request while the index is built


@dataclass(frozen=True)
class VectorIndex:
    vectors: np.ndarray  # (n_passages, dim) float32, each row of unit length (zero rows stay zero)
    build_s: float = 0.0  # seconds the engine took to embed the passages, when built by `build`

    @classmethod
    def from_vectors(cls, vectors: Sequence[Sequence[float]] | np.ndarray, build_s: float = 0.0) -> VectorIndex:
        m = np.asarray(vectors, dtype=np.float32)
        if m.ndim != 2 or m.shape[0] == 0:
            raise ValueError(f"an index needs a non-empty (passages, dim) matrix, got shape {m.shape}")
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return cls(np.divide(m, norms, out=np.zeros_like(m), where=norms > 0), build_s)

    @property
    def n(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def search(self, query: Sequence[float] | np.ndarray, k: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """The `k` passages most cosine-similar to `query`, best first: (passage numbers, similarities)."""
        q = np.asarray(query, dtype=np.float32)
        if q.shape != (self.dim,):
            raise ValueError(f"query vector of shape {q.shape} for an index of width {self.dim}")
        norm = float(np.linalg.norm(q))
        scores = self.vectors @ (q / norm if norm > 0 else q)
        k = min(k, self.n)
        part = np.argpartition(-scores, k - 1)[:k] if k < self.n else np.arange(self.n)
        cut = scores[part].min()
        cand = np.flatnonzero(scores >= cut)  # every tie at the cut, so the lower number wins it
        order = cand[np.lexsort((cand, -scores[cand]))][:k]
        return tuple(int(i) for i in order), tuple(float(scores[i]) for i in order)
