"""Attention backends for `LlamaModel.forward`: no cache (reference), and the paged KV cache.

The paged cache is one tensor per K and V: [layers, num_blocks, block_size,
kv_heads, head_dim]; a sequence's token at position p lives in slot
`block_table[p // block_size] * block_size + p % block_size` of the flattened
block axis. Prefill attends within each new sequence (causal SDPA); decode
gathers each sequence's whole blocks with one `index_select` (contiguous
block-sized copies, much faster on CPU than a per-slot gather) and runs one
masked SDPA for the whole batch, with the query heads of a KV group laid out
as query rows (GQA without copies).

Sliding windows (Mistral, Qwen2 with `use_sliding_window`) are masks on top of
the causal one, kept in their own functions (`sliding_sdpa`,
`decode_window_mask`): a layer with a window passes `window=W` and a query at
position p then sees keys p-W+1 .. p, as transformers' sliding-window mask.
The cache still holds every position (no ring buffer): windows change which
keys are read, not what is stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


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


def decode_window_mask(meta: PagedMeta, window: int, device: torch.device) -> torch.Tensor | None:
    """[B, 1, 1, max_len] keys a decode step may read under `window` (and the padding mask); None: all of them."""
    if meta.max_len <= window:
        return meta.mask
    cols = torch.arange(meta.max_len, device=device)
    # each sequence's context length: its query is the token at position len-1
    lens = torch.full((1, 1, 1, 1), meta.max_len, device=device) if meta.mask is None else \
        meta.mask.sum(-1, keepdim=True)
    inside = cols >= lens - window  # [B, 1, 1, max_len]
    return inside if meta.mask is None else inside & meta.mask


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


@dataclass
class PagedMeta:
    """Per-step inputs of the paged backend, built once per step by the ModelRunner."""

    is_prefill: bool
    slot_mapping: torch.Tensor  # [T] int64: where each new token's K/V is written
    cu_seqlens: list[int] | None = None  # prefill: packed sequence boundaries
    block_tables: torch.Tensor | None = None  # decode: [B, max_blocks] int64 (padded with block 0)
    max_len: int = 0  # decode: longest context in the batch
    mask: torch.Tensor | None = None  # decode: [B, 1, 1, max_len] bool, None when all contexts are max_len


class PagedAttention:
    """Writes new K/V into the paged cache, then attends (prefill: within the new tokens; decode: over the cache)."""

    def __init__(self, k_cache: torch.Tensor, v_cache: torch.Tensor, meta: PagedMeta) -> None:
        self.k_cache, self.v_cache, self.meta = k_cache, v_cache, meta
        self._window_masks: dict[int, torch.Tensor | None] = {}  # per window size, built once per step

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 window: int | None = None) -> torch.Tensor:
        m = self.meta
        kc, vc = self.k_cache[layer], self.v_cache[layer]  # [blocks, block_size, Hkv, D]
        n_blocks, block_size, hkv, d = kc.shape
        kc.view(n_blocks * block_size, hkv, d).index_copy_(0, m.slot_mapping, k)
        vc.view(n_blocks * block_size, hkv, d).index_copy_(0, m.slot_mapping, v)
        if m.is_prefill:
            assert m.cu_seqlens is not None
            return NoCacheAttention(m.cu_seqlens)(layer, q, k, v, window)
        assert m.block_tables is not None
        b, hq, _ = q.shape
        width = m.block_tables.shape[1] * block_size
        flat = m.block_tables.reshape(-1)
        keys = kc.index_select(0, flat).view(b, width, hkv, d)[:, : m.max_len].transpose(1, 2)  # [B, Hkv, L, D]
        values = vc.index_select(0, flat).view(b, width, hkv, d)[:, : m.max_len].transpose(1, 2)
        mask = m.mask
        if window is not None:
            if window not in self._window_masks:
                self._window_masks[window] = decode_window_mask(m, window, q.device)
            mask = self._window_masks[window]
        o = F.scaled_dot_product_attention(q.reshape(b, hkv, hq // hkv, d), keys, values, attn_mask=mask)
        return o.reshape(b, hq, d)
