"""The fp32 oracle every converted model is checked against: own_engine's plain forward pass, as numpy.

`logits(model, ids)` and `greedy(model, ids, n)` are `own_engine.model.reference`'s (a full-sequence fp32
forward, no KV cache, itself tested against transformers), with logits as numpy arrays for the
format checks. Loaded models are cached per folder for the life of the process.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def logits(model_path: Path, prompt_ids: list[int]) -> np.ndarray:
    """fp32 logits [T, vocab] for every prompt position."""
    from own_engine.model import reference

    return np.asarray(reference.logits(model_path, list(prompt_ids)).float().numpy(), dtype=np.float32)


def greedy(model_path: Path, prompt_ids: list[int], n: int) -> list[int]:
    """`n` greedy tokens after the prompt, never stopping at EOS."""
    from own_engine.model import reference

    return list(reference.greedy(model_path, list(prompt_ids), n))
