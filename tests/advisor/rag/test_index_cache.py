"""The pipeline index's cache: the same settings load the saved vectors, a change in any key builds them again, and
a damaged or unwritable entry never stops a run (no engine needed: the build is a counted function)."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest

from adapters.base import EngineInfo
from advisor.rag.index import VectorIndex
from advisor.rag.index_cache import IndexKey, cached_index, corpus_sha256, entry, index_key

KEY = IndexKey("sentence-transformers", "6.2.0", "f" * 64, "fp32", "cpu", corpus_sha256(("a b", "c d", "e")), 96)
CHANGED = {"engine": "onnxruntime-embed", "engine_version": "6.3.0", "model_fingerprint": "0" * 64,
           "precision": "int8", "device": "cuda:0", "corpus_sha256": corpus_sha256(("a b", "c d", "f")),
           "passage_words": 64}


class Builder:
    def __init__(self, seed: int = 0) -> None:
        self.calls = 0
        self.seed = seed

    def __call__(self) -> VectorIndex:
        self.calls += 1
        return VectorIndex.from_vectors(np.random.default_rng(self.seed).normal(size=(3, 8)), build_s=1.25)


def test_the_same_settings_load_the_saved_vectors() -> None:
    build = Builder()
    built, how = cached_index(KEY, 3, build)
    assert how["source"] == "built" and how["build_s"] == 1.25 and how["load_s"] is None
    assert how["cache"] == str(entry(KEY)) and build.calls == 1
    loaded, how = cached_index(KEY, 3, build)
    assert build.calls == 1 and how["source"] == "loaded" and how["build_s"] is None and how["load_s"] >= 0
    assert np.array_equal(loaded.vectors, built.vectors)  # bit for bit: a search returns what the built one does
    q = np.arange(8, dtype=np.float32)
    assert loaded.search(q, 2) == built.search(q, 2)


def test_every_key_has_a_change_that_builds_again() -> None:
    assert set(CHANGED) == {f.name for f in fields(IndexKey)}  # a key added later needs its case here
    cached_index(KEY, 3, Builder())
    for name, value in CHANGED.items():
        build = Builder(seed=1)
        index, how = cached_index(replace(KEY, **{name: value}), 3, build)
        assert build.calls == 1 and how["source"] == "built", name
        assert cached_index(replace(KEY, **{name: value}), 3, build)[1]["source"] == "loaded", name
    build = Builder()
    assert cached_index(KEY, 3, build)[1]["source"] == "loaded" and build.calls == 0  # the first entry is intact


def test_a_served_engine_is_built_every_time_and_says_why() -> None:
    build = Builder()
    for _ in range(2):
        _, how = cached_index(None, 3, build)
        assert how["source"] == "built" and how["cache"].startswith("not cached: a served engine")
    assert build.calls == 2


@pytest.mark.parametrize("damage", ["truncated", "wrong rows", "key edited", "key missing"])
def test_a_damaged_entry_is_built_again_and_replaced(damage: str) -> None:
    cached_index(KEY, 3, Builder())
    folder = entry(KEY)
    if damage == "truncated":
        (folder / "vectors.npy").write_bytes((folder / "vectors.npy").read_bytes()[:40])
    elif damage == "wrong rows":
        np.save(folder / "vectors.npy", np.ones((2, 8), dtype=np.float32))
    elif damage == "key edited":
        (folder / "key.json").write_text(json.dumps({**json.loads((folder / "key.json").read_text()), "device": "x"}))
    else:
        (folder / "key.json").unlink()
    build = Builder()
    assert cached_index(KEY, 3, build)[1]["source"] == "built" and build.calls == 1
    assert cached_index(KEY, 3, build)[1]["source"] == "loaded" and build.calls == 1


def test_an_unwritable_cache_is_noted_and_the_run_goes_on(own_cache: Path) -> None:
    own_cache.parent.mkdir(parents=True, exist_ok=True)
    own_cache.write_text("a file where the cache folder would be")
    index, how = cached_index(KEY, 3, Builder())
    assert how["source"] == "built" and how["cache"].startswith("not cached: could not write") and index.n == 3


def _folder(tmp: Path) -> Path:
    tmp.mkdir()
    (tmp / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "hidden_size": 8}))
    (tmp / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": "x.Transformer"}]))
    (tmp / "model.safetensors").write_bytes(b"weights" * 100)
    return tmp


def test_the_key_follows_the_model_folder_the_corpus_and_the_chunking(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "st")
    info = EngineInfo(adapter="sentence-transformers", engine="sentence-transformers", version="6.2.0", device="cpu",
                      model=str(folder), format="hf-safetensors", precision="fp32")
    texts = ("one passage", "two passages")
    key = index_key("sentence-transformers", False, info, texts, 96)
    assert key is not None and key == index_key("sentence-transformers", False, info, texts, 96)
    assert (key.engine, key.engine_version, key.precision, key.device, key.passage_words) == \
        ("sentence-transformers", "6.2.0", "fp32", "cpu", 96)
    (folder / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": "x.Other"}]))
    stack = index_key("sentence-transformers", False, info, texts, 96)
    (folder / "model.safetensors").write_bytes(b"retrained" * 100)
    weights = index_key("sentence-transformers", False, info, texts, 96)
    assert len({key.model_fingerprint, stack.model_fingerprint, weights.model_fingerprint}) == 3
    assert index_key("sentence-transformers", False, info, ("one passage", "two passage"), 96).corpus_sha256 != \
        key.corpus_sha256
    assert corpus_sha256(("ab", "c")) != corpus_sha256(("a", "bc"))  # where one passage ends is part of the corpus
    served = replace(info, model="BAAI/bge-small", device="http://127.0.0.1:7997")
    assert index_key("openai-embed", True, served, texts, 96) is None
