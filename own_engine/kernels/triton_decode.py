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

It is opt-in (`LLMEngine(decode_attention="triton")`, `--opt decode_attention=triton`) until a GPU has measured
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


_kernel = None


def _build():
    import triton
    import triton.language as tl

    @triton.jit
    def paged_decode(q_ptr, k_ptr, v_ptr, out_ptr, tables_ptr, lens_ptr,
                     sq_row, sq_head, sk_blk, sk_pos, sk_head, sv_blk, sv_pos, sv_head, so_row, so_head, st_row,
                     scale, window,
                     GROUP: tl.constexpr, GROUP_P2: tl.constexpr, BLOCK: tl.constexpr, D: tl.constexpr,
                     D_P2: tl.constexpr):
        row = tl.program_id(0)
        kvh = tl.program_id(1)
        n = tl.load(lens_ptr + row)  # context length, the new token's K/V included
        g = tl.arange(0, GROUP_P2)
        d = tl.arange(0, D_P2)
        pos = tl.arange(0, BLOCK)
        gmask = g < GROUP
        dmask = d < D
        heads = kvh * GROUP + g
        q = tl.load(q_ptr + row * sq_row + heads[:, None] * sq_head + d[None, :],
                    mask=gmask[:, None] & dmask[None, :], other=0.0).to(tl.float32)
        m_i = tl.full([GROUP_P2], float("-inf"), tl.float32)
        l_i = tl.zeros([GROUP_P2], tl.float32)
        acc = tl.zeros([GROUP_P2, D_P2], tl.float32)
        start = tl.where(window > 0, tl.maximum(n - window, 0), 0)  # one type on both branches, as compiling needs
        for j in range(start // BLOCK, (n + BLOCK - 1) // BLOCK):
            blk = tl.load(tables_ptr + row * st_row + j)
            p = j * BLOCK + pos
            valid = (p < n) & (p >= start)
            kv_mask = valid[:, None] & dmask[None, :]
            k = tl.load(k_ptr + blk * sk_blk + pos[:, None] * sk_pos + kvh * sk_head + d[None, :],
                        mask=kv_mask, other=0.0).to(tl.float32)  # [BLOCK, D_P2]
            s = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * scale  # [GROUP_P2, BLOCK]
            s = tl.where(valid[None, :], s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            alpha = tl.exp(m_i - m_new)
            e = tl.exp(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(e, axis=1)
            v = tl.load(v_ptr + blk * sv_blk + pos[:, None] * sv_pos + kvh * sv_head + d[None, :],
                        mask=kv_mask, other=0.0).to(tl.float32)
            acc = acc * alpha[:, None] + tl.sum(e[:, :, None] * v[None, :, :], axis=1)
            m_i = m_new
        out = acc / l_i[:, None]
        tl.store(out_ptr + row * so_row + heads[:, None] * so_head + d[None, :],
                 out.to(out_ptr.dtype.element_ty), mask=gmask[:, None] & dmask[None, :])

    return paged_decode


def paged_decode_attention(q: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, block_tables: torch.Tensor,
                           lens: torch.Tensor, window: int | None = None) -> torch.Tensor:
    """q [B, Hq, D], one query per row; kc/vc one layer's cache [blocks, block_size, Hkv, D]; block_tables
    [B, max_blocks] int64 (past a row's blocks: anything); lens [B] int64 context lengths -> [B, Hq, D]."""
    global _kernel
    if _kernel is None:
        _kernel = _build()
    import triton

    b, hq, d = q.shape
    _, block_size, hkv, _ = kc.shape
    assert kc.stride(3) == 1 and vc.stride(3) == 1 and q.stride(2) == 1, "head dims must be contiguous"
    assert block_size & (block_size - 1) == 0, "the kernel's block size must be a power of two"
    group = hq // hkv
    out = q.new_empty((b, hq, d))
    _kernel[(b, hkv)](q, kc, vc, out, block_tables, lens,
                      q.stride(0), q.stride(1), kc.stride(0), kc.stride(1), kc.stride(2),
                      vc.stride(0), vc.stride(1), vc.stride(2), out.stride(0), out.stride(1), block_tables.stride(0),
                      d ** -0.5, window or 0,
                      GROUP=group, GROUP_P2=triton.next_power_of_2(group), BLOCK=block_size, D=d,
                      D_P2=triton.next_power_of_2(d))
    return out
