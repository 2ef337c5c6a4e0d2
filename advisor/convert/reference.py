"""The fp32 reference every converted model is checked against.

`logits(model, ids)` and `greedy(model, ids, n)` call `own_engine.reference`
when it is installed, else fall back to transformers' LlamaForCausalLM in
fp32 (the same function, computed by the library the HF folder was written
for). Loaded models are cached per folder for the life of the process.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np


def _own_reference() -> Any | None:
    try:
        from own_engine import reference  # type: ignore[attr-defined]
    except ImportError:
        return None
    return reference


@functools.lru_cache(maxsize=2)
def _hf_model(path: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model.eval()


def logits(model_path: Path, prompt_ids: list[int]) -> np.ndarray:
    """fp32 logits [T, vocab] for every prompt position."""
    ref = _own_reference()
    if ref is not None:
        return np.asarray(ref.logits(model_path, list(prompt_ids)).float().numpy(), dtype=np.float32)
    import torch

    with torch.no_grad():
        out = _hf_model(str(model_path))(torch.tensor([list(prompt_ids)]))
    return out.logits[0].float().numpy()


def greedy(model_path: Path, prompt_ids: list[int], n: int) -> list[int]:
    """`n` greedy tokens after the prompt, never stopping at EOS."""
    ref = _own_reference()
    if ref is not None:
        return list(ref.greedy(model_path, list(prompt_ids), n))
    import torch

    model = _hf_model(str(model_path))
    with torch.no_grad():
        out = model.generate(torch.tensor([list(prompt_ids)]), max_new_tokens=n, min_new_tokens=n, do_sample=False,
                             attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long), pad_token_id=0)
    return out[0, len(prompt_ids):].tolist()


def greedy_with_logits(model_path: Path, prompt_ids: list[int], n: int) -> tuple[list[int], np.ndarray]:
    """Greedy tokens and the reference logits [n, vocab] that chose each of them (teacher-forced)."""
    toks = greedy(model_path, prompt_ids, n)
    full = logits(model_path, list(prompt_ids) + toks[:-1])
    return toks, full[len(prompt_ids) - 1:]
