"""Paged decode attention in Triton: each decode row reads only its own blocks, on CUDA and in its graphs.

The `sdpa-padded` route (a GPU's default, and what the CUDA graphs replay) gathers every row's blocks up to the
batch's longest context (in a graph: the context bucket, up to twice that), copies them, then runs one masked
SDPA over the copy. On the H200 (2026-11-26, llama-1b, chat at 64 users, contexts up to ~4,000 tokens) decode-only
steps took 8.9-11.7 ms at 33-64 rows, against 3.4 ms bare at 64 rows with short contexts
(benchmarks/RESULTS.md, "Where the H200's served time went"). This kernel is the `triton` route: one program
per (row, KV head) walks that row's block table up to its own length, reading each block of K and V in place
once, with an online softmax over the query heads of the KV group (GQA without copies) and an optional
sliding window; no gather, no padding past the row's length, no mask tensor. The loop's bound is read from the
lengths tensor on the device, so one captured graph serves any contexts within its block bucket.

It is opt-in (`EngineConfig(decode_attention="triton")`, `--opt decode_attention=triton`) until a GPU has measured
it: the tests run it on CPU under Triton's interpreter (`TRITON_INTERPRET=1`), against the SDPA routes, for
its numbers and for the engine's tokens; nothing here has been compiled for or timed on a GPU yet.
"""

from __future__ import annotations

import os

import torch


def available() -> str | None:
    """None when Triton can run the kernel here (CUDA, or the interpreter on CPU), else why not."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return "Triton is not installed (it comes with PyTorch's CUDA wheels; pip install triton)"
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        return "Triton compiles for a GPU only (TRITON_INTERPRET=1 runs it on CPU, slowly, for tests)"
    return None


_kernels = None
TOKENS_PER_ITER = 64  # one loop iteration reads this many positions (several blocks: one gathered load each of K, V)
MIN_ITERS_PER_SPLIT = 2


def _build():
    import triton
    import triton.language as tl

    @triton.jit(do_not_specialize=["st_row", "window", "iters_per_split"])
    def paged_decode(q_ptr, k_ptr, v_ptr, out_ptr, m_ptr, l_ptr, acc_ptr, tables_ptr, lens_ptr,
                     sq_row, sq_head, sk_blk, sk_pos, sk_head, sv_blk, sv_pos, sv_head, so_row, so_head, st_row,
                     scale, window, iters_per_split, hq,
                     GROUP: tl.constexpr, GROUP_P2: tl.constexpr, BLOCK: tl.constexpr, PAGES: tl.constexpr,
                     D: tl.constexpr, D_P2: tl.constexpr, SPLITS: tl.constexpr):
        row = tl.program_id(0)
        kvh = tl.program_id(1)
        split = tl.program_id(2)
        n = tl.load(lens_ptr + row)  # context length, the new token's K/V included
        g = tl.arange(0, GROUP_P2)
        d = tl.arange(0, D_P2)
        t = tl.arange(0, BLOCK * PAGES)
        page_of, offset = t // BLOCK, t % BLOCK
        gmask = g < GROUP
        dmask = d < D
        heads = kvh * GROUP + g
        q = tl.load(q_ptr + row * sq_row + heads[:, None] * sq_head + d[None, :],
                    mask=gmask[:, None] & dmask[None, :], other=0.0).to(tl.float32)
        m_i = tl.full([GROUP_P2], float("-inf"), tl.float32)
        l_i = tl.zeros([GROUP_P2], tl.float32)
        acc = tl.zeros([GROUP_P2, D_P2], tl.float32)
        start = tl.where(window > 0, tl.maximum(n - window, 0), 0)  # one type on both branches, as compiling needs
        j0 = start // (BLOCK * PAGES) + split * iters_per_split
        j1 = tl.minimum(j0 + iters_per_split, (n + BLOCK * PAGES - 1) // (BLOCK * PAGES))
        for j in range(j0, j1):
            p = j * (BLOCK * PAGES) + t
            valid = (p < n) & (p >= start)
            blk = tl.load(tables_ptr + row * st_row + j * PAGES + page_of, mask=valid, other=0)
            kv_mask = valid[:, None] & dmask[None, :]
            k = tl.load(k_ptr + blk[:, None] * sk_blk + offset[:, None] * sk_pos + kvh * sk_head + d[None, :],
                        mask=kv_mask, other=0.0).to(tl.float32)  # [BLOCK * PAGES, D_P2]
            v = tl.load(v_ptr + blk[:, None] * sv_blk + offset[:, None] * sv_pos + kvh * sv_head + d[None, :],
                        mask=kv_mask, other=0.0).to(tl.float32)
            s = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * scale  # [GROUP_P2, BLOCK * PAGES]
            s = tl.where(valid[None, :], s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            alpha = tl.exp(m_i - m_new)
            e = tl.exp(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(e, axis=1)
            acc = acc * alpha[:, None] + tl.sum(e[:, :, None] * v[None, :, :], axis=1)
            m_i = m_new
        out_mask = gmask[:, None] & dmask[None, :]
        if SPLITS == 1:
            tl.store(out_ptr + row * so_row + heads[:, None] * so_head + d[None, :],
                     (acc / l_i[:, None]).to(out_ptr.dtype.element_ty), mask=out_mask)
        else:  # this split's share: its running max, sum and unnormalised output, for `combine`
            part = (row * hq + heads) * SPLITS + split
            tl.store(m_ptr + part, m_i, mask=gmask)
            tl.store(l_ptr + part, l_i, mask=gmask)
            tl.store(acc_ptr + part[:, None] * D + d[None, :], acc, mask=out_mask)

    @triton.jit
    def combine(out_ptr, m_ptr, l_ptr, acc_ptr, so_row, so_head, hq,
                SPLITS: tl.constexpr, SPLITS_P2: tl.constexpr, D: tl.constexpr, D_P2: tl.constexpr):
        row = tl.program_id(0)
        h = tl.program_id(1)
        sp = tl.arange(0, SPLITS_P2)
        d = tl.arange(0, D_P2)
        smask = sp < SPLITS
        dmask = d < D
        part = (row * hq + h) * SPLITS + sp
        m = tl.load(m_ptr + part, mask=smask, other=float("-inf"))
        l_s = tl.load(l_ptr + part, mask=smask, other=0.0)
        w = tl.exp(m - tl.max(m, axis=0))  # a split that had no position: m = -inf, weight 0
        acc = tl.load(acc_ptr + part[:, None] * D + d[None, :], mask=smask[:, None] & dmask[None, :], other=0.0)
        out = tl.sum(acc * w[:, None], axis=0) / tl.sum(l_s * w, axis=0)
        tl.store(out_ptr + row * so_row + h * so_head + d, out.to(out_ptr.dtype.element_ty), mask=dmask)

    return paged_decode, combine


def splits_for(rows_x_heads: int, iters: int, device: torch.device) -> int:
    """How many programs share one row's context (flash-decoding): enough for about two programs per SM when the
    batch alone is too small to fill the GPU, each with at least MIN_ITERS_PER_SPLIT iterations."""
    sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 132
    want = -(-2 * sms // max(rows_x_heads, 1))
    return max(1, min(want, iters // MIN_ITERS_PER_SPLIT))


def paged_decode_attention(q: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, block_tables: torch.Tensor,
                           lens: torch.Tensor, window: int | None = None, splits: int | None = None) -> torch.Tensor:
    """q [B, Hq, D], one query per row; kc/vc one layer's cache [blocks, block_size, Hkv, D]; block_tables
    [B, max_blocks] int64 (past a row's blocks: anything); lens [B] int64 context lengths, each >= 1 ->
    [B, Hq, D]. `splits`: programs per row and KV head over its context (default `splits_for`; a function of the
    shapes only, so a CUDA graph captures one)."""
    global _kernels
    if _kernels is None:
        _kernels = _build()
    paged_decode, combine = _kernels
    import triton

    b, hq, d = q.shape
    _, block_size, hkv, _ = kc.shape
    assert kc.stride(3) == 1 and vc.stride(3) == 1 and q.stride(2) == 1, "head dims must be contiguous"
    assert block_tables.stride(1) == 1 and lens.is_contiguous(), "block tables' rows and lens must be contiguous"
    assert block_size & (block_size - 1) == 0, "the kernel's block size must be a power of two"
    pages = max(1, TOKENS_PER_ITER // block_size)
    iters = -(-block_tables.shape[1] // pages)  # the most loop iterations any row can need
    splits = splits or splits_for(b * hkv, iters, q.device)
    per_split = -(-iters // splits)
    splits = -(-iters // per_split)  # no split left without iterations by the rounding
    group = hq // hkv
    out = q.new_empty((b, hq, d))
    if splits == 1:
        m = l_s = acc = out  # not written
    else:
        m, l_s = (torch.empty((b, hq, splits), dtype=torch.float32, device=q.device) for _ in range(2))
        acc = torch.empty((b, hq, splits, d), dtype=torch.float32, device=q.device)
    paged_decode[(b, hkv, splits)](
        q, kc, vc, out, m, l_s, acc, block_tables, lens,
        q.stride(0), q.stride(1), kc.stride(0), kc.stride(1), kc.stride(2), vc.stride(0), vc.stride(1),
        vc.stride(2), out.stride(0), out.stride(1), block_tables.stride(0), d ** -0.5, window or 0, per_split, hq,
        GROUP=group, GROUP_P2=triton.next_power_of_2(group), BLOCK=block_size, PAGES=pages, D=d,
        D_P2=triton.next_power_of_2(d), SPLITS=splits)
    if splits > 1:
        combine[(b, hq)](out, m, l_s, acc, out.stride(0), out.stride(1), hq,
                         SPLITS=splits, SPLITS_P2=triton.next_power_of_2(splits), D=d, D_P2=triton.next_power_of_2(d))
    return out
