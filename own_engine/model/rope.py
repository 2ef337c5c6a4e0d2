"""Rotary position embeddings with the common scaling types: default, linear, dynamic, llama3, yarn.

Formulas follow transformers' `modeling_rope_utils`. `dynamic` (NTK) is
static here: the base is stretched once for `max_model_len` when that exceeds
the trained context (transformers re-derives it per forward length instead).
"""

from __future__ import annotations

import math

import torch

from model_cache.config import ModelConfig


def inv_freq_and_scale(cfg: ModelConfig, max_model_len: int) -> tuple[torch.Tensor, float]:
    """Inverse frequencies [head_dim/2] (fp32) and the attention scale applied to cos/sin."""
    dim, base, rs = cfg.head_dim, cfg.rope_theta, cfg.rope_scaling
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    kind = cfg.rope_type
    if kind == "default":
        return inv, 1.0
    factor = float(rs.get("factor", 1.0))
    if kind == "linear":
        return inv / factor, 1.0
    if kind == "dynamic":
        orig = int(rs.get("original_max_position_embeddings", cfg.max_position_embeddings))
        if max_model_len <= orig:
            return inv, 1.0
        base = base * ((factor * max_model_len / orig) - (factor - 1)) ** (dim / (dim - 2))
        return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)), 1.0
    if kind == "llama3":
        orig = float(rs["original_max_position_embeddings"])
        low, high = float(rs.get("low_freq_factor", 1.0)), float(rs.get("high_freq_factor", 4.0))
        low_wavelen, high_wavelen = orig / low, orig / high
        wavelen = 2 * math.pi / inv
        out = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (orig / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        return torch.where(medium, smoothed, out), 1.0
    assert kind == "yarn", kind
    orig = int(rs.get("original_max_position_embeddings", cfg.max_position_embeddings))
    beta_fast, beta_slow = float(rs.get("beta_fast", 32)), float(rs.get("beta_slow", 1))
    mscale = rs.get("attention_factor")
    if mscale is None:
        mscale = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0

    def corr_dim(rot: float) -> float:
        return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))

    low = math.floor(corr_dim(beta_fast)) if rs.get("truncate", True) else corr_dim(beta_fast)
    high = math.ceil(corr_dim(beta_slow)) if rs.get("truncate", True) else corr_dim(beta_slow)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    extrapolation = 1 - ramp
    inv = (inv / factor) * (1 - extrapolation) + inv * extrapolation
    return inv, float(mscale)


def rope_cache(cfg: ModelConfig, max_model_len: int) -> torch.Tensor:
    """[max_model_len, 2, head_dim] fp32: row 0 = [cos, cos], row 1 = [-sin, sin] (half-split layout)."""
    inv, scale = inv_freq_and_scale(cfg, max_model_len)
    t = torch.arange(max_model_len, dtype=torch.float32)
    freqs = torch.outer(t, inv)
    cos, sin = freqs.cos() * scale, freqs.sin() * scale
    return torch.stack([torch.cat([cos, cos], -1), torch.cat([-sin, sin], -1)], dim=1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [T, heads, head_dim] rotated as in HF LLaMA (x*cos + rotate_half(x)*sin); cos/sin [T, 1, head_dim].

    rotate_half(x) = [-x2, x1] is `roll(x, D/2) * [-1, 1]`; the sign lives in `sin`, so this is 4 kernels.
    """
    return x * cos + torch.roll(x, x.shape[-1] // 2, dims=-1) * sin
