"""The paged-KV-cache attention backend for `LlamaModel.forward`: decodes and prefill chunks in one step.

The cache is one tensor per K and V: [layers, num_blocks, block_size,
kv_heads, head_dim]; a sequence's token at position p lives in slot
`block_table[p // block_size] * block_size + p % block_size` of the flattened
block axis. A step's flat batch is the one-token rows first (decodes), then
one run of rows per prefill chunk. Every new K/V is written to the cache
first. Decode rows attend by one route per kernel backend, chosen once when
the model runner is built (`decode_route`), never per step:

- `sdpa-runs`, the torch and oneDNN backends on CPU: one SDPA per run of
  decode rows, with the query heads of a KV group laid out as query rows
  (GQA without copies) and no mask (`decode_attention_runs`). A row whose
  blocks form one run of blocks is a run alone and reads the cache in place
  (views); consecutive other rows with one context length are one run, their
  blocks gathered with one `index_select`. Why: CPU SDPA loses its fast
  kernel with a mask, so unequal contexts cost several times more as one
  padded, masked call (measured 10x for 8 sequences with one at 900 tokens)
  than as one call per sequence; and at equal contexts one call per sequence
  in place took 1.6-4.6x less CPU time than one call over the gathered blocks
  of all (copying the context costs more than the calls), while with
  scattered blocks one gathered call for all took 0.78-0.99x the time of a
  gather and a call per sequence (benchmarks/decode_runs.py, B 1-64, contexts
  128-512, 1 thread; how the route came to be: benchmarks/history/own_engine.md);
- `sdpa-padded`, the torch backend on CUDA and the CUDA-graphs backend (on
  CPU, `cuda_graphs=True` runs it eagerly): one SDPA for the whole batch over
  each sequence's blocks gathered with one `index_select`, padded to the
  longest and masked (`decode_attention`). A graph needs fixed shapes, and a
  GPU one launch, not one per run;
- `triton`, opt-in on CUDA (`decode_attention="triton"`), also under the CUDA graphs: one Triton program
  per row and KV head walks the row's own blocks up to its own length, in place
  (`own_engine.kernels.triton_decode`): no gather, no padding, no mask; not yet measured on a GPU;
- `native`, the native backend (`own_engine.kernels.native`): one call per
  layer for every decode row and head, reading the blocks in place
  (`native_decode_attention`): no per-run calls, no copies, no mask.

A chunk that starts a prompt attends causally within itself; a later chunk
gathers its sequence's cached context and attends with a causal mask offset
by it. With the native kernels every chunk reads its context from the cache
in place instead (`native_chunk_attention`: 1.4-2.5x faster than SDPA on
small-100m's shapes, chunks of 100-512 rows after 0-3584 cached;
benchmarks/native_attention.py), and all rows of a step go into one output,
no `cat`.

A layer with a sliding window W (Mistral, some Qwen2 layers) passes
`window=W`: a query at position p then reads keys p-W+1 .. p only. A run
of decode rows slices its context to the last W positions; the padded decode
and a later chunk narrow their masks. The cache still holds every
position (windows change what is read, not what is stored).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from own_engine.kernels.native import NativeKernels
from own_engine.model.attention import causal_sdpa, sliding_sdpa


@dataclass
class ChunkMeta:
    """One prefill chunk: rows [start, end) of the flat batch, after `num_cached` tokens already in the cache."""

    start: int
    end: int
    num_cached: int
    block_ids: torch.Tensor | None = None  # [blocks] int64 with positions [0, num_cached + n): num_cached or native
    mask: torch.Tensor | None = None  # [n, num_cached + n] bool: query i sees keys 0..num_cached + i (SDPA, num_cached)


DECODE_ROUTES = ("native", "sdpa-runs", "sdpa-padded", "triton")  # see the module's docstring


def decode_route(native: NativeKernels | None, device: torch.device, cuda_graphs: bool,
                 decode_attention: str = "sdpa") -> str:
    """The backend's one decode route, chosen once (the model runner's): the native kernels where the backend
    has them, the padded batch where graphs replay it or on a GPU, else (CPU SDPA) runs of equal contexts;
    `decode_attention="triton"`: the Triton paged kernel (`own_engine.kernels.triton_decode`), opt-in."""
    if decode_attention not in ("sdpa", "triton"):
        raise ValueError(f"decode_attention must be 'sdpa' or 'triton', got {decode_attention!r}")
    if native is not None:
        if cuda_graphs:
            raise ValueError("cuda_graphs replays the torch backend's decode route, not the native kernels': "
                             "on CPU give it linear_kernels='torch' or 'onednn'")
        if decode_attention == "triton":
            raise ValueError("decode_attention='triton' is for CUDA; on CPU own_engine's native kernels attend "
                             "(give linear_kernels='torch' to try the Triton kernel under TRITON_INTERPRET=1)")
        return "native"
    if decode_attention == "triton":
        from own_engine.kernels.triton_decode import available

        why = available()
        if why is not None:
            raise ValueError(f"decode_attention='triton' cannot run here: {why}")
        return "triton"
    return "sdpa-padded" if cuda_graphs or device.type != "cpu" else "sdpa-runs"


@dataclass
class DecodeRun:
    """Consecutive decode rows whose cached contexts have one length (route `sdpa-runs`): one SDPA, no mask.
    One row whose blocks are one run is read in place (`k`, `v`); a run of scattered rows gathers its blocks."""

    length: int
    rows: int = 1
    k: torch.Tensor | None = None  # [layers, 1, Hkv, length, D] view into the K cache (one row, blocks in one run)
    v: torch.Tensor | None = None
    block_ids: torch.Tensor | None = None  # [rows * blocks] int64: each row's first ceil(length / block) blocks


@dataclass
class PagedMeta:
    """Per-step inputs of the paged backend, built once per step by the ModelRunner (not per layer)."""

    slot_mapping: torch.Tensor  # [T] int64: where each new token's K/V is written
    num_decodes: int = 0  # rows [0, num_decodes) are one-token queries over their sequence's cache
    block_tables: torch.Tensor | None = None  # [num_decodes, max_blocks] int64 (padded with any block)
    max_len: int = 0  # longest decode context
    mask: torch.Tensor | None = None  # [num_decodes, 1, 1, max_len] bool, None when all contexts are max_len
    runs: list[DecodeRun] | None = None  # route sdpa-runs, instead of block_tables
    lens: torch.Tensor | None = None  # [num_decodes] int64 context lengths, for the native kernel
    native: NativeKernels | None = None  # every row through the native kernels (decodes: block_tables, lens)
    triton: bool = False  # decode rows through the Triton paged kernel (route `triton`: block_tables, lens)
    chunks: list[ChunkMeta] = field(default_factory=list)


class PagedAttention:
    """Writes the step's new K/V into the paged cache, then attends for decode rows and prefill chunks."""

    def __init__(self, k_cache: torch.Tensor, v_cache: torch.Tensor, meta: PagedMeta) -> None:
        self.k_cache, self.v_cache, self.meta = k_cache, v_cache, meta
        self._window_masks: dict[int, torch.Tensor | None] = {}  # padded decode: per window size, once per step

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 window: int | None = None) -> torch.Tensor:
        kc, vc = self.k_cache[layer], self.v_cache[layer]  # [blocks, block_size, Hkv, D]
        n_blocks, block_size, hkv, d = kc.shape
        kc.view(n_blocks * block_size, hkv, d).index_copy_(0, self.meta.slot_mapping, k)
        vc.view(n_blocks * block_size, hkv, d).index_copy_(0, self.meta.slot_mapping, v)
        return self.attend(layer, q, k, v, window)

    def attend(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               window: int | None = None) -> torch.Tensor:
        """Attention only, the step's new K/V already in the cache (`own_engine.kernels.native_layer` writes them as it
        rotates them)."""
        m = self.meta
        kc, vc = self.k_cache[layer], self.v_cache[layer]
        if m.native is not None:  # every row by the native kernels, into one output
            out = q.new_empty(q.shape)
            if m.num_decodes:
                native_decode_attention(m.native, q[: m.num_decodes], kc, vc, m, window, out[: m.num_decodes])
            for c in m.chunks:
                native_chunk_attention(m.native, q[c.start:c.end], kc, vc, c, window, out[c.start:c.end])
            return out
        parts = []
        if m.triton and m.num_decodes:
            from own_engine.kernels.triton_decode import paged_decode_attention

            assert m.block_tables is not None and m.lens is not None
            parts.append(paged_decode_attention(q[: m.num_decodes], kc, vc, m.block_tables, m.lens, window))
        elif m.runs is not None:
            parts.append(decode_attention_runs(layer, q[: m.num_decodes], kc, vc, m.runs, window))
        elif m.num_decodes:
            mask = m.mask
            if window is not None:
                if window not in self._window_masks:
                    self._window_masks[window] = decode_window_mask(m, window, q.device)
                mask = self._window_masks[window]
            parts.append(decode_attention(q[: m.num_decodes], kc, vc, m, mask))
        for c in m.chunks:
            parts.append(chunk_attention(q[c.start:c.end], k[c.start:c.end], v[c.start:c.end], kc, vc, c, window))
        return parts[0] if len(parts) == 1 else torch.cat(parts)


def _rows_of_heads(q: torch.Tensor) -> torch.Tensor:
    """q [rows, H, D] whose heads are contiguous within a row (a view of the qkv projection is): the layout the
    native kernels read, at any row stride."""
    return q if q.stride(2) == 1 and q.stride(1) == q.shape[2] else q.contiguous()


def native_decode_attention(native: NativeKernels, q: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor,
                            m: PagedMeta, window: int | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """q [B, Hq, D] fp32, one query per sequence over its cached context (the last `window` positions of it
    under a sliding window) -> [B, Hq, D] (into `out`, contiguous, when given), by `kernels/decode_attention.c`
    in one call."""
    assert m.block_tables is not None and m.lens is not None
    q = _rows_of_heads(q)
    _, block_size, hkv, d = kc.shape
    b, hq, _ = q.shape
    out = q.new_empty((b, hq, d)) if out is None else out
    assert out.is_contiguous() and out.shape == (b, hq, d)
    if native.lib.decode_attention(q.data_ptr(), q.stride(0), kc.data_ptr(), vc.data_ptr(),
                                   m.block_tables.data_ptr(), m.lens.data_ptr(), out.data_ptr(), b, hq, hkv, d,
                                   block_size, m.block_tables.shape[1], window or 0, torch.get_num_threads()):
        raise MemoryError("own_engine's native decode attention could not allocate its scores buffer")
    return out


def native_chunk_attention(native: NativeKernels, q: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor,
                           c: ChunkMeta, window: int | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """q [n, Hq, D] fp32 of one prefill chunk, its K/V already in the cache -> [n, Hq, D] (into `out`, rows of
    contiguous heads, when given): causal over the cached context and the chunk (within `window` when the layer
    slides), by `kernels/chunk_attention.c` in one call."""
    assert c.block_ids is not None
    q = _rows_of_heads(q)
    _, block_size, hkv, d = kc.shape
    n, hq, _ = q.shape
    out = q.new_empty((n, hq, d)) if out is None else out
    assert out.stride(2) == 1 and out.stride(1) == d
    if native.lib.chunk_attention(q.data_ptr(), q.stride(0), kc.data_ptr(), vc.data_ptr(), c.block_ids.data_ptr(),
                                  c.num_cached, n, out.data_ptr(), out.stride(0), hq, hkv, d, block_size,
                                  window or 0, torch.get_num_threads()):
        raise MemoryError("own_engine's native chunk attention could not allocate its buffers")
    return out


def native_chunk_agrees(native: NativeKernels) -> bool:
    """The native chunk kernel against SDPA on a probe: GQA, blocks out of order, a first chunk and a later one,
    a head size that is not a multiple of 16, with and without a window."""
    gen = torch.Generator().manual_seed(1)
    blocks, block_size, hkv, hq, d = 9, 4, 2, 6, 40
    kc, vc = (torch.randn(blocks, block_size, hkv, d, generator=gen) for _ in range(2))
    table = torch.tensor([5, 2, 7, 1, 0, 8])
    for n, cached in ((7, 0), (9, 13)):
        ctx = cached + n
        slots = table[torch.arange(cached, ctx) // block_size] * block_size + torch.arange(cached, ctx) % block_size
        k, v = kc.view(-1, hkv, d)[slots], vc.view(-1, hkv, d)[slots]
        mask = torch.arange(ctx)[None, :] <= torch.arange(cached, ctx)[:, None] if cached else None
        c = ChunkMeta(0, n, cached, block_ids=table[: -(-ctx // block_size)], mask=mask)
        q = torch.randn(n, hq, d, generator=gen)
        for window in (None, 5):
            if not torch.allclose(native_chunk_attention(native, q, kc, vc, c, window),
                                  chunk_attention(q, k, v, kc, vc, c, window), atol=1e-5, rtol=1e-4):
                return False
    return True


def native_decode_agrees(native: NativeKernels) -> bool:
    """The native decode against the SDPA runs on a probe: GQA, blocks out of order, unequal contexts, head
    sizes of both of the kernel's paths (32: in registers; 40: any size), with and without a window."""
    gen = torch.Generator().manual_seed(0)
    blocks, block_size, hkv, hq = 9, 4, 2, 6
    tables = [[5, 2, 7], [1, 0, 8]]
    lens = [11, 3]
    meta = PagedMeta(slot_mapping=torch.zeros(0, dtype=torch.long), num_decodes=2,
                     block_tables=torch.tensor(tables), lens=torch.tensor(lens))
    for d in (32, 40):
        kc, vc = (torch.randn(blocks, block_size, hkv, d, generator=gen) for _ in range(2))
        q = torch.randn(2, hq, d, generator=gen)
        for window in (None, 5):
            runs = [DecodeRun(n, block_ids=torch.tensor(t)) for t, n in zip(tables, lens, strict=True)]
            want = decode_attention_runs(0, q, kc, vc, runs, window)
            got = native_decode_attention(native, q, kc, vc, meta, window)
            if not torch.allclose(got, want, atol=1e-5, rtol=1e-4):
                return False
    return True


def decode_window_mask(m: PagedMeta, window: int, device: torch.device) -> torch.Tensor | None:
    """[B, 1, 1, max_len] keys a batched decode may read under `window` (and the padding mask); None: all of them."""
    if m.max_len <= window:
        return m.mask
    cols = torch.arange(m.max_len, device=device)
    # each sequence's context length: its query is the token at position len-1
    lens = torch.full((1, 1, 1, 1), m.max_len, device=device) if m.mask is None else m.mask.sum(-1, keepdim=True)
    inside = cols >= lens - window  # [B, 1, 1, max_len]
    return inside if m.mask is None else inside & m.mask


def decode_attention(q: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, m: PagedMeta,
                     mask: torch.Tensor | None) -> torch.Tensor:
    """q [B, Hq, D], one query per sequence over its cached context (`mask`: keys it may read) -> [B, Hq, D]:
    the route `sdpa-padded`."""
    assert m.block_tables is not None
    _, block_size, hkv, d = kc.shape
    b, hq, _ = q.shape
    width = m.block_tables.shape[1] * block_size
    flat = m.block_tables.reshape(-1)
    keys = kc.index_select(0, flat).view(b, width, hkv, d)[:, : m.max_len].transpose(1, 2)  # [B, Hkv, L, D]
    values = vc.index_select(0, flat).view(b, width, hkv, d)[:, : m.max_len].transpose(1, 2)
    o = F.scaled_dot_product_attention(q.reshape(b, hkv, hq // hkv, d), keys, values, attn_mask=mask)
    return o.reshape(b, hq, d)


def decode_attention_runs(layer: int, q: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, runs: list[DecodeRun],
                          window: int | None = None) -> torch.Tensor:
    """q [B, Hq, D]: one SDPA per run of rows over their own contexts only (no padding, no mask) -> [B, Hq, D];
    under a sliding window, over the last `window` positions of each."""
    _, _, hkv, d = kc.shape
    b, hq, _ = q.shape
    qg = q.view(b, hkv, hq // hkv, d)
    outs, row = [], 0
    for r in runs:
        if r.k is not None and r.v is not None:
            keys, values = r.k[layer], r.v[layer]  # [1, Hkv, L, D] views
        else:
            assert r.block_ids is not None
            keys = kc.index_select(0, r.block_ids).view(r.rows, -1, hkv, d)[:, : r.length].transpose(1, 2)
            values = vc.index_select(0, r.block_ids).view(r.rows, -1, hkv, d)[:, : r.length].transpose(1, 2)
        if window is not None and r.length > window:
            keys, values = keys[:, :, r.length - window:], values[:, :, r.length - window:]
        outs.append(F.scaled_dot_product_attention(qg[row:row + r.rows], keys, values))
        row += r.rows
    assert row == b, "the runs must cover every decode row"
    return (outs[0] if len(outs) == 1 else torch.cat(outs)).reshape(b, hq, d)


def chunk_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor,
                    c: ChunkMeta, window: int | None = None) -> torch.Tensor:
    """q/k/v [n, H, D] of one prefill chunk -> [n, Hq, D]; causal over the cached context and the chunk
    (within `window` when the layer slides)."""
    if c.num_cached == 0:
        return causal_sdpa(q, k, v) if window is None else sliding_sdpa(q, k, v, window)
    assert c.block_ids is not None and c.mask is not None
    mask = c.mask
    if window is not None and c.num_cached + q.shape[0] > window:
        cols = torch.arange(mask.shape[1], device=q.device)
        rows = torch.arange(c.num_cached, c.num_cached + q.shape[0], device=q.device)
        mask = mask & (cols[None, :] > rows[:, None] - window)
    _, block_size, hkv, d = kc.shape
    ctx = c.num_cached + q.shape[0]
    keys = kc.index_select(0, c.block_ids).view(-1, hkv, d)[:ctx].transpose(0, 1)  # [Hkv, ctx, D]
    values = vc.index_select(0, c.block_ids).view(-1, hkv, d)[:ctx].transpose(0, 1)
    o = F.scaled_dot_product_attention(q.transpose(0, 1).unsqueeze(0), keys.unsqueeze(0), values.unsqueeze(0),
                                       attn_mask=mask, enable_gqa=q.shape[1] != hkv)
    return o.squeeze(0).transpose(0, 1)
