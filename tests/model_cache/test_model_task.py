"""A model folder's task read from its files, and the one-line refusal of a model given to the other task."""

from __future__ import annotations

import json
from pathlib import Path

from model_cache.model_task import model_task, task_mismatch


def _folder(tmp_path: Path, name: str, files: dict[str, object]) -> Path:
    d = tmp_path / name
    d.mkdir()
    for f, doc in files.items():
        (d / f).write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return d


def test_sentence_transformers_causal_lm_gguf_and_unknown(tmp_path: Path) -> None:
    st = _folder(tmp_path, "st", {"config.json": {"architectures": ["BertModel"]}, "modules.json": []})
    lm = _folder(tmp_path, "lm", {"config.json": {"architectures": ["LlamaForCausalLM"]}})
    gguf = _folder(tmp_path, "gguf", {"m.gguf": "GGUF"})
    bare = _folder(tmp_path, "bare", {"config.json": {"architectures": ["BertModel"]}})
    assert (model_task(st), model_task(lm), model_task(gguf), model_task(bare)) == ("embed", "generate", "generate",
                                                                                    None)
    assert task_mismatch(st, "embed") is None and task_mismatch(lm, "generate") is None
    assert task_mismatch(bare, "embed") is None  # files that do not say are not refused
    to_embed, to_generate = task_mismatch(lm, "embed"), task_mismatch(st, "generate")
    assert to_embed is not None and "generation model, not an embedding model" in to_embed
    assert to_generate is not None and "advisor embed" in to_generate
    assert "\n" not in to_embed + to_generate
