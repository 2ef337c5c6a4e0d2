"""What each CPU engine cannot do, checked before a conversion or a run, as one clear error or a stated cap.

One function per engine takes the model's config.json (and the precision)
and returns `EngineLimits` (the context the engine computes faithfully, and
notes for EngineInfo), or raises `EngineLimitError` naming the engine, the
limit and what to do, instead of a kernel message mid-run. Converters call
`for_format` before writing; adapters call their engine's function in
`start()`. The limits come from the engines' own code and docs (noted per
check) and from failures seen with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adapters.formats.check import ConversionError


class EngineLimitError(ConversionError):
    """The model needs something the engine cannot do; the message names engine, limit and fix."""


@dataclass(frozen=True)
class EngineLimits:
    engine: str
    max_context: int  # tokens per sequence the engine computes the model's function over
    notes: tuple[str, ...] = ()


def _context(cfg: dict[str, Any]) -> int:
    return int(cfg.get("max_position_embeddings", 2048))


def sliding_window(cfg: dict[str, Any]) -> int | None:
    """The smallest sliding window any layer uses (transformers' rules per family), or None."""
    from model_cache.config import ModelConfig, ModelConfigError

    try:
        return ModelConfig.from_dict(cfg).sliding_window
    except ModelConfigError:
        return None


def _window_cap(engine: str, cfg: dict[str, Any], context: int) -> tuple[int, tuple[str, ...]]:
    window = sliding_window(cfg)
    if window is None or window >= context:
        return context, ()
    return window, (f"{engine} has no sliding-window attention for {cfg.get('model_type')}: the context is capped "
                    f"at the {window}-token window (the trained context is {context}); beyond it the engine would "
                    "attend to keys the model never sees. Use own_engine for longer contexts",)


def llama_cpp(cfg: dict[str, Any], precision: str = "fp32") -> EngineLimits:
    """llama.cpp: no sliding windows for the llama/qwen2 architectures; q8_0/q4_0 blocks of 32 per row."""
    context, notes = _window_cap("llama.cpp", cfg, _context(cfg))
    if precision in ("q8_0", "q4_0"):
        hidden, inter = int(cfg["hidden_size"]), int(cfg["intermediate_size"])
        bad = [f"{name} {n}" for name, n in (("hidden_size", hidden), ("intermediate_size", inter)) if n % 32]
        if bad:
            raise EngineLimitError(f"llama.cpp {precision} quantizes rows in blocks of 32 values; this model's "
                                   f"{', '.join(bad)} is not a multiple of 32. Use GGUF fp32 or fp16")
    return EngineLimits("llama.cpp", context, notes)


def llama_cpp_context(cfg: dict[str, Any]) -> EngineLimits:
    """The context llama.cpp computes faithfully (what the GGUF records as its context length)."""
    return llama_cpp(cfg)


def onnxruntime_genai(cfg: dict[str, Any], precision: str = "fp32") -> EngineLimits:
    """onnxruntime-genai on CPU: head size a multiple of 16; sliding windows not computed faithfully (cap)."""
    n_head = int(cfg["num_attention_heads"])
    head = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // n_head)
    if head % 16:
        # onnxruntime's CPU GroupQueryAttention kernel: "head_size shall be a multiple of 16" at the first run
        raise EngineLimitError(f"ONNX Runtime GenAI's CPU attention (GroupQueryAttention) needs a head size that is "
                               f"a multiple of 16; this model's is {head} (hidden_size / num_attention_heads). "
                               "Use llama_cpp, openvino or own for this model")
    # the builder writes GroupQueryAttention's local_window_size, but a prefill longer than the window computes
    # other logits than the model (measured: tests/adapters/formats/test_families.py), so the context stops at the window
    context, notes = _window_cap("ONNX Runtime GenAI", cfg, _context(cfg))
    return EngineLimits("ONNX Runtime GenAI", context, notes)


def openvino(cfg: dict[str, Any], precision: str = "fp32") -> EngineLimits:
    """OpenVINO GenAI's continuous batching (PagedAttention) runs the traced graph's attention without its mask."""
    context, notes = _window_cap("OpenVINO GenAI (continuous batching)", cfg, _context(cfg))
    return EngineLimits("OpenVINO GenAI", context, notes)


def for_format(fmt: str, cfg: dict[str, Any], precision: str) -> EngineLimits:
    """The limits of the engine that runs `fmt` (gguf -> llama.cpp, onnx -> ORT GenAI, openvino -> OpenVINO)."""
    check = {"gguf": llama_cpp, "onnx": onnxruntime_genai, "openvino": openvino}[fmt]
    return check(cfg, precision)
