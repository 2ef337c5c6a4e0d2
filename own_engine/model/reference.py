"""Reference outputs for conversion checks: plain full-sequence forward passes, no KV cache.

Other engines' converted models (GGUF, ONNX, OpenVINO) are compared against
these. Models are loaded through own_engine's loader (fp32, CPU) and kept per path.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import torch

from own_engine.model.attention import NoCacheAttention
from own_engine.model.llama import LlamaModel
from own_engine.model.loader import load_model


@lru_cache(maxsize=4)
def _model(path: str) -> LlamaModel:
    return load_model(path, device="cpu", dtype="float32")


def logits(model_path: str | Path, prompt_ids: list[int]) -> torch.Tensor:
    """[len(prompt_ids), vocab] fp32 logits of one causal forward over the whole prompt."""
    if not prompt_ids:
        raise ValueError("prompt_ids is empty; give at least one token id")
    model = _model(str(Path(model_path).resolve()))
    vocab = model.cfg.vocab_size
    bad = [t for t in prompt_ids if not 0 <= t < vocab]
    if bad:
        raise ValueError(f"token ids {bad[:5]} are outside the vocab [0, {vocab})")
    if len(prompt_ids) > model.max_model_len:
        raise ValueError(f"prompt has {len(prompt_ids)} tokens; the model's context is {model.max_model_len}")
    ids = torch.tensor(prompt_ids, dtype=torch.long)
    with torch.inference_mode():
        return model(ids, torch.arange(len(ids)), NoCacheAttention([0, len(ids)]))


def greedy(model_path: str | Path, prompt_ids: list[int], n_tokens: int) -> list[int]:
    """`n_tokens` greedy continuation ids (EOS ignored), recomputing the full sequence each step."""
    seq = list(prompt_ids)
    for _ in range(n_tokens):
        seq.append(int(logits(model_path, seq)[-1].argmax()))
    return seq[len(prompt_ids):]
