"""Attention without a cache for `LlamaModel.forward`: causal SDPA over packed sequences (the reference).

The paged-KV-cache backend the engine serves with is `own_engine.model.paged_attention`.

Sliding windows (Mistral, Qwen2 with `use_sliding_window`) are masks on top of
the causal one (`sliding_sdpa`; the paged backend builds its own): a layer
with a window passes `window=W` and a query at position p then sees keys
p-W+1 .. p, as transformers' sliding-window mask. The cache still holds every
position (no ring buffer): windows change which keys are read, not what is
stored.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F

# On an H100/H200 (sm90) and sm100, PyTorch 2.10+ with its bundled cuDNN >= 9.15 tries cuDNN's attention first
# (sdp_utils.cpp, check_prefer_cudnn_attention), and cuDNN builds an execution plan for every new shape: hundreds
# of ms each (FunASR#3704: 0.44 s on a B200 with torch 2.11; sglang#4650: ~400 ms). A served engine's eager
# steps meet a new shape almost every time (each prompt's length, each batch's longest context), so own_engine
# never lets SDPA take cuDNN on a GPU. The H200 runs (torch 2.11) show the cost this likely was: every step that
# carried a prompt took 88-103 ms, whatever its size (benchmarks/RESULTS.md, "Where the H200's served time went").
CUDNN_SDPA = False  # True only for an A/B of that cost (benchmarks/mixed_step.py --cudnn-sdpa)


@contextlib.contextmanager
def _without_cudnn_sdpa() -> Iterator[None]:
    was = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        yield
    finally:
        torch.backends.cuda.enable_cudnn_sdp(was)


def sdpa_backends(device: torch.device) -> contextlib.AbstractContextManager[None]:
    """The SDPA backends own_engine's forward may use on `device`: on CUDA all but cuDNN's (see CUDNN_SDPA);
    elsewhere PyTorch's choice. The switch is process-wide while the forward runs (PyTorch's flags are global),
    and is put back after it."""
    if device.type != "cuda" or CUDNN_SDPA:
        return contextlib.nullcontext()
    return _without_cudnn_sdpa()


def causal_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """One sequence: q [L, Hq, D], k/v [L, Hkv, D] -> [L, Hq, D], causal."""
    o = F.scaled_dot_product_attention(q.transpose(0, 1).unsqueeze(0), k.transpose(0, 1).unsqueeze(0),
                                       v.transpose(0, 1).unsqueeze(0), is_causal=True,
                                       enable_gqa=q.shape[1] != k.shape[1])
    return o.squeeze(0).transpose(0, 1)


def sliding_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int) -> torch.Tensor:
    """One sequence, causal within a sliding window: query i sees keys i-window+1 .. i."""
    n = q.shape[0]
    if n <= window:
        return causal_sdpa(q, k, v)
    i = torch.arange(n, device=q.device)
    mask = (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - window)  # [L, L] True = attend
    o = F.scaled_dot_product_attention(q.transpose(0, 1).unsqueeze(0), k.transpose(0, 1).unsqueeze(0),
                                       v.transpose(0, 1).unsqueeze(0), attn_mask=mask,
                                       enable_gqa=q.shape[1] != k.shape[1])
    return o.squeeze(0).transpose(0, 1)


class NoCacheAttention:
    """Plain full-sequence causal attention over packed sequences (cu_seqlens = [0, l0, l0+l1, ...])."""

    def __init__(self, cu_seqlens: list[int]) -> None:
        self.cu_seqlens = cu_seqlens

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 window: int | None = None) -> torch.Tensor:
        cu = self.cu_seqlens

        def one(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return causal_sdpa(q, k, v) if window is None else sliding_sdpa(q, k, v, window)

        if len(cu) == 2:
            return one(q, k, v)
        return torch.cat([one(q[a:b], k[a:b], v[a:b]) for a, b in zip(cu[:-1], cu[1:], strict=True)])

