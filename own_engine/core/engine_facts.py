"""What both own_engine engines (continuous `LLMEngine`, static `StaticBatchEngine`) share: the refusal of a
request no engine mode can serve, the device choice, and the device/precision/model facts of `describe()`.

Its own file so that neither engine imports the other (tests/test_import_circles.py).
"""

from __future__ import annotations

import os
from typing import Any

import torch

from own_engine.core.sampling_params import SamplingParams


class RequestRefused(ValueError):
    """The request can never be served by this engine configuration; the message says what to change."""


def check_request(prompt_ids: list[int], params: SamplingParams, vocab: int, max_model_len: int) -> int:
    """Refuse a request no engine mode can serve (empty, bad ids, too long); returns its total length."""
    if not prompt_ids:
        raise RequestRefused("the prompt is empty; send at least one token id")
    if min(prompt_ids) < 0 or max(prompt_ids) >= vocab:
        bad = next(t for t in prompt_ids if not 0 <= t < vocab)
        raise RequestRefused(f"prompt token id {bad} is outside the model's vocab [0, {vocab})")
    total = len(prompt_ids) + params.max_tokens
    if total > max_model_len:
        raise RequestRefused(f"prompt ({len(prompt_ids)}) + max_tokens ({params.max_tokens}) = {total} tokens "
                             f"exceeds max_model_len {max_model_len}; shorten the request")
    return total


def pick_device(device: str) -> torch.device:
    """'auto' is CUDA when available, else CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' asked for but no CUDA GPU is visible to torch; use device 'cpu' or 'auto' (advisor: --device cpu)")
    return dev


def describe_model(engine: Any) -> dict:
    """Device, precision, model facts shared by both engines' `describe()` (an LLMEngine or a StaticBatchEngine)."""
    cfg, model = engine.config, engine.model
    return {"device": engine.device_name, "precision": precision_name(model.dtype),
            "model_path": str(engine.model_path),
            "threads": engine.num_threads if engine.device.type == "cpu" else None,
            "linear_kernels": engine.linear_kernels, "linear_kernel_note": engine.linear_kernel_note,
            "n_params": model.n_params, "dtype_bytes": model.embed_tokens.element_size(),
            "max_model_len": engine.max_model_len, "pid": os.getpid(),
            "model_config": {k: getattr(cfg, k) for k in (
                "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                "intermediate_size", "vocab_size")}}


def precision_name(dtype: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]


def device_name(dev: torch.device) -> str:
    """The device as a report names it: "cpu", or "cuda:0 (the GPU's name)"."""
    if dev.type == "cuda":
        idx = dev.index or 0
        return f"cuda:{idx} ({torch.cuda.get_device_name(idx)})"
    return "cpu"


def generate(engine: Any, prompts: list[list[int]], params: SamplingParams | list[SamplingParams]) -> list[list[int]]:
    """Offline convenience for either engine: run every prompt to completion; completion ids in prompt order."""
    plist = params if isinstance(params, list) else [params] * len(prompts)
    ids = [engine.add_request(p, sp) for p, sp in zip(prompts, plist, strict=True)]
    outs: dict[int, list[int]] = {i: [] for i in ids}
    while engine.has_unfinished():
        for seq_id, toks, _ in engine.step():
            if seq_id in outs:  # requests added by someone else run beside these
                outs[seq_id].extend(toks)
    return [outs[i] for i in ids]
