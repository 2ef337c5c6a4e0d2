"""The pipeline index's vectors cached on disk, so a second run with the same settings loads them instead of embedding
the corpus again.

A cache entry is keyed by everything the vectors depend on (`IndexKey`): the embedding engine and its version, the
model folder's fingerprint (its config, tokenizer and weights as `adapters.formats.fingerprint` reads them, and the
sentence-transformers module stack as the ONNX conversion keys it), the precision, the device, the corpus's
checksum (the passages' text, in order) and the chunking (words per passage). A change in any of them is another
entry, so the index is built again. A served engine has no model folder here to fingerprint: its index is always
built. The entries live under the model cache, `$ADVISOR_HOME/rag-index/<key digest>/` (`vectors.npy`, the unit
vectors as the index holds them, and `key.json`, written last, so an entry without it is never read). An entry that
cannot be read or does not match its key is built again and replaced; one that cannot be written is noted in the
result and the run goes on.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adapters.base import EngineInfo
from advisor.rag.index import VectorIndex
from advisor.saved.atomic import write_atomic
from model_cache.paths import advisor_home

CACHE_DIR = "rag-index"


@dataclass(frozen=True)
class IndexKey:
    engine: str  # the embed engine's registry name
    engine_version: str
    model_fingerprint: str
    precision: str
    device: str
    corpus_sha256: str  # of the passages' text, in order
    passage_words: int  # the chunking

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


def corpus_sha256(texts: tuple[str, ...]) -> str:
    """The passages' checksum: each text's length and bytes, in order (no two corpora give the same stream)."""
    h = hashlib.sha256()
    for t in texts:
        b = t.encode()
        h.update(len(b).to_bytes(8, "little") + b)
    return h.hexdigest()


def model_fingerprint(folder: Path) -> str:
    """The folder's fingerprint as the ONNX embedding conversion keys it (one key of a model folder for both caches)."""
    from adapters.formats import fingerprint
    from adapters.formats.st_onnx import _fingerprint

    return _fingerprint(folder, fingerprint(folder))


def index_key(engine: str, served: bool, info: EngineInfo, texts: tuple[str, ...], passage_words: int
              ) -> IndexKey | None:
    """The cache key of this engine's index of `texts`; None for a served engine (no model folder to fingerprint)."""
    folder = Path(info.model)
    if served or not folder.is_dir():
        return None
    return IndexKey(engine, info.version, model_fingerprint(folder), info.precision, info.device,
                    corpus_sha256(texts), passage_words)


def entry(key: IndexKey) -> Path:
    return advisor_home() / CACHE_DIR / key.digest


def cached_index(key: IndexKey | None, n_passages: int, build: Callable[[], VectorIndex]
                 ) -> tuple[VectorIndex, dict[str, Any]]:
    """The index, loaded from the cache when its entry matches `key`, else built (and saved when there is a key);
    with what result.json's `index` says about it: `source` (built or loaded) and its seconds."""
    if key is None:
        index = build()
        return index, {"source": "built", "build_s": round(index.build_s, 4), "load_s": None,
                       "cache": "not cached: a served engine has no model folder here to key the cache on"}
    folder = entry(key)
    t0 = time.perf_counter()
    vectors = _load(folder, key, n_passages)
    if vectors is not None:
        return VectorIndex(vectors), {"source": "loaded", "build_s": None,
                                      "load_s": round(time.perf_counter() - t0, 4), "cache": str(folder)}
    index = build()
    try:
        _save(folder, key, index)
        saved = str(folder)
    except OSError as e:
        saved = f"not cached: could not write {folder} ({e.strerror or e})"
    return index, {"source": "built", "build_s": round(index.build_s, 4), "load_s": None, "cache": saved}


def _load(folder: Path, key: IndexKey, n_passages: int) -> np.ndarray | None:
    try:
        if json.loads((folder / "key.json").read_text(encoding="utf-8")) != asdict(key):
            return None
        m = np.load(folder / "vectors.npy", allow_pickle=False)
    except (OSError, ValueError, EOFError):  # no entry, or one half written or damaged: built again
        return None
    ok = m.dtype == np.float32 and m.ndim == 2 and m.shape[0] == n_passages and m.shape[1] > 0 and np.isfinite(m).all()
    return m if ok else None


def _save(folder: Path, key: IndexKey, index: VectorIndex) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "key.json").unlink(missing_ok=True)  # the entry is invalid until its key is written again, last
    buf = io.BytesIO()
    np.save(buf, index.vectors, allow_pickle=False)
    write_atomic(folder / "vectors.npy", buf.getvalue())
    write_atomic(folder / "key.json", json.dumps(asdict(key), indent=1))
