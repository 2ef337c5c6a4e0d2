"""The decoder layer on own_engine's native kernels: the decoder stack (`NativeLayers`) that `backends.choose`
gives an fp32 CPU model whose linears are the panel kernel's, for a forward over the paged cache.

The same arithmetic as `DecoderLayer.forward`, in 9 calls instead of ~40 PyTorch ops, with no temporaries
beyond the linears' outputs:

    RMSNorm                                   kernels/layer_ops.c  rms_norm
    qkv projection                            panel_linear
    RoPE on q and k, new K/V into the cache   kernels/layer_ops.c  rope_store
    attention over the cache                  PagedAttention.attend (native decode rows, SDPA chunks)
    x += o projection                         panel_linear, accumulating into the residual
    RMSNorm                                   rms_norm
    gate/up projection                        panel_linear
    SiLU(gate) * up                           kernels/layer_ops.c  silu_mul
    x += down projection                      panel_linear, accumulating

At a decode step every PyTorch op is a few microseconds of dispatch around almost no work, and 12 layers of
them were ~2.5 ms of a ~9 ms batch-1 step of small-100m; at prefill the ops are passes over memory that one
kernel makes once (benchmarks/history/engines.md, "own_engine's decoder layer on native kernels").

A decode step (one new token per sequence, no prefill chunk) goes further: `decode_layers_forward` runs every
layer in one call and one OpenMP parallel region (`kernels/decode_step.c`), the same units of work as the 9
calls, bit for bit, without 108 calls from Python and as many parallel regions a step (benchmarks/history/engines.md,
"One call per decode step").
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F

from model_cache.config import ModelConfig
from own_engine.kernels.native import NativeKernels
from own_engine.kernels.panel_linear import PanelLinear
from own_engine.model.llama import AttentionBackend, DecoderLayer, Linear, LlamaModel, torch_layers
from own_engine.model.paged_attention import PagedAttention, PagedMeta
from own_engine.model.rope import apply_rope

# decode_layers_forward's table of every layer's pointers, per model: (the KV cache's key, the table)
_TABLES: weakref.WeakKeyDictionary[LlamaModel, tuple[tuple, torch.Tensor]] = weakref.WeakKeyDictionary()


class NativeLayers:
    """`LlamaModel.decoder` on the native kernels: over the paged cache, `native_forward`; over any other
    attention (the static engine's cache, none), the model's PyTorch layers, whose linears are still the
    panel kernel's."""

    def __init__(self, native: NativeKernels) -> None:
        self.native = native

    def __call__(self, model: LlamaModel, x: torch.Tensor, positions: torch.Tensor,
                 attn: AttentionBackend) -> torch.Tensor:
        if isinstance(attn, PagedAttention):
            return native_forward(self.native, model, x, positions, attn)
        return torch_layers(model, x, positions, attn)


def native_forward(native: NativeKernels, model: LlamaModel, x: torch.Tensor, positions: torch.Tensor,
                   attn: PagedAttention) -> torch.Tensor:
    """Every decoder layer of `model` over x [T, hidden] fp32 on the native kernels: a decode step in one call,
    any other step (prefill chunks in it) a layer at a time. Both are the native backend's one route: the same
    kernels' units of work, bit for bit (`decode_layers_agree`), the decode rows' attention always
    `native_decode_attention`'s; the one call only saves the per-layer calls from Python."""
    m = attn.meta
    assert m.native is not None, "the native decoder stack runs on the native decode route only"
    if not m.chunks and m.num_decodes == x.shape[0]:
        return decode_layers_forward(native, model, x, positions, attn)
    return layer_by_layer(native, model, x, positions, attn)


def layer_by_layer(native: NativeKernels, model: LlamaModel, x: torch.Tensor, positions: torch.Tensor,
                   attn: PagedAttention) -> torch.Tensor:
    """Every decoder layer, a layer at a time (`layer_forward`): any step, and the reference for the one-call
    decode step."""
    for i, layer in enumerate(model.layers):
        x = layer_forward(native, layer, i, x, positions, model.rope, attn)
    return x


def _ptr(t: torch.Tensor | None) -> int:
    return 0 if t is None else t.data_ptr()


def decode_layers_forward(native: NativeKernels, model: LlamaModel, x: torch.Tensor, positions: torch.Tensor,
                          attn: PagedAttention) -> torch.Tensor:
    """x [B, hidden] fp32 contiguous, one decode row per sequence (updated in place and returned): every layer
    by `kernels/decode_step.c` in one call. The layers' pointers are gathered once per KV cache."""
    cfg, m = model.cfg, attn.meta
    assert x.dtype == torch.float32 and x.is_contiguous() and m.block_tables is not None and m.lens is not None
    # a layer's cache pointer moves with the cache's base and shape: both are the key
    key = tuple((c.data_ptr(), tuple(c.shape), c.stride()) for c in (attn.k_cache, attn.v_cache))
    cached = _TABLES.get(model)
    if cached is None or cached[0] != key:
        rows = [[_ptr(layer.input_layernorm.weight), _ptr(layer.qkv_proj.weight), _ptr(layer.qkv_proj.bias),
                 _ptr(layer.o_proj.weight), _ptr(layer.o_proj.bias), _ptr(layer.post_attention_layernorm.weight),
                 _ptr(layer.gate_up_proj.weight), _ptr(layer.gate_up_proj.bias), _ptr(layer.down_proj.weight),
                 _ptr(layer.down_proj.bias), _ptr(attn.k_cache[i]), _ptr(attn.v_cache[i]), layer.window or 0]
                for i, layer in enumerate(model.layers)]
        assert len(rows[0]) == native.lib.decode_layer_fields()
        cached = _TABLES[model] = (key, torch.tensor(rows, dtype=torch.int64))
    table = cached[1]
    b, hidden = x.shape
    hq, hkv, d, inter = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.intermediate_size
    scratch = x.new_empty(b * (hidden + (hq + 2 * hkv) * d + hq * d + 3 * inter))
    if native.lib.decode_layers(x.data_ptr(), b, len(model.layers), table.data_ptr(), hidden, hq, hkv, d, inter,
                                cfg.rms_norm_eps, model.rope.data_ptr(), positions.data_ptr(),
                                m.slot_mapping.data_ptr(), m.block_tables.data_ptr(), m.block_tables.shape[1],
                                m.lens.data_ptr(), attn.k_cache.shape[2], scratch.data_ptr(),
                                torch.get_num_threads()):
        raise MemoryError("own_engine's native decode attention could not allocate its scores buffer")
    return x


def layer_forward(native: NativeKernels, layer: DecoderLayer, idx: int, x: torch.Tensor, positions: torch.Tensor,
                  rope: torch.Tensor, attn: PagedAttention) -> torch.Tensor:
    """x [T, hidden] fp32 contiguous (updated in place and returned); positions [T] int64; rope: the model's
    [max_len, 2, D] fp32 table; the layer's linears are `PanelLinear`s."""
    cfg, lib, threads = layer.cfg, native.lib, torch.get_num_threads()
    t, hidden = x.shape
    hq, hkv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    assert x.dtype == torch.float32 and x.is_contiguous() and rope.shape[-1] == d  # the kernels' layout
    h = torch.empty_like(x)
    norm = layer.input_layernorm
    lib.rms_norm(x.data_ptr(), norm.weight.data_ptr(), h.data_ptr(), t, hidden, norm.eps, threads)
    qkv = layer.qkv_proj(h)
    kc, vc = attn.k_cache[idx], attn.v_cache[idx]
    lib.rope_store(qkv.data_ptr(), t, hq, hkv, d, rope.data_ptr(), positions.data_ptr(),
                   attn.meta.slot_mapping.data_ptr(), kc.data_ptr(), vc.data_ptr(), threads)
    q = qkv[:, : cfg.q_size].view(t, hq, d)
    k = qkv[:, cfg.q_size: cfg.q_size + cfg.kv_size].view(t, hkv, d)
    v = qkv[:, cfg.q_size + cfg.kv_size:].view(t, hkv, d)
    o = attn.attend(idx, q, k, v, layer.window).reshape(t, cfg.q_size).contiguous()
    layer.o_proj.add_to(o, x)
    norm = layer.post_attention_layernorm
    lib.rms_norm(x.data_ptr(), norm.weight.data_ptr(), h.data_ptr(), t, hidden, norm.eps, threads)
    gate_up = layer.gate_up_proj(h)
    act = gate_up.new_empty((t, cfg.intermediate_size))
    lib.silu_mul(gate_up.data_ptr(), act.data_ptr(), t, cfg.intermediate_size, threads)
    layer.down_proj.add_to(act, x)
    return x


def layer_ops_agree(native: NativeKernels) -> bool:
    """rms_norm, rope_store and silu_mul against PyTorch on a probe whose sizes are not multiples of 16."""
    gen = torch.Generator().manual_seed(0)
    lib, threads = native.lib, torch.get_num_threads()
    x, w = torch.randn(5, 40, generator=gen), torch.randn(40, generator=gen)
    out = torch.empty_like(x)
    lib.rms_norm(x.data_ptr(), w.data_ptr(), out.data_ptr(), 5, 40, 1e-5, threads)
    if not torch.allclose(out, F.rms_norm(x, (40,), w, 1e-5), atol=1e-5, rtol=1e-4):
        return False
    gate_up = torch.randn(3, 2 * 37, generator=gen) * 4
    act = torch.empty(3, 37)
    lib.silu_mul(gate_up.data_ptr(), act.data_ptr(), 3, 37, threads)
    if not torch.allclose(act, F.silu(gate_up[:, :37]) * gate_up[:, 37:], atol=1e-5, rtol=1e-4):
        return False
    t, hq, hkv, d, slots_n, max_len = 3, 6, 2, 40, 9, 50
    qkv = torch.randn(t, (hq + 2 * hkv) * d, generator=gen)
    angle = torch.randn(max_len, d // 2, generator=gen)
    rope = torch.stack([torch.cat([angle.cos()] * 2, -1), torch.cat([-angle.sin(), angle.sin()], -1)], dim=1)
    positions, slots = torch.tensor([7, 0, 49]), torch.tensor([4, 8, 0])
    kc, vc = torch.zeros(slots_n, hkv, d), torch.zeros(slots_n, hkv, d)
    cs = rope[positions]
    want = apply_rope(qkv[:, : (hq + hkv) * d].view(t, hq + hkv, d), cs[:, :1], cs[:, 1:])
    want_v = qkv[:, (hq + hkv) * d:].view(t, hkv, d).clone()
    lib.rope_store(qkv.data_ptr(), t, hq, hkv, d, rope.data_ptr(), positions.data_ptr(), slots.data_ptr(),
                   kc.data_ptr(), vc.data_ptr(), threads)
    rotated = qkv[:, : (hq + hkv) * d].view(t, hq + hkv, d)
    return (torch.allclose(rotated, want, atol=1e-5, rtol=1e-4) and torch.equal(kc[slots], rotated[:, hq:])
            and torch.equal(vc[slots], want_v))


def decode_layers_agree(native: NativeKernels) -> bool:
    """The one-call decode step against the per-layer path on a 2-layer model with random weights: biases on
    every linear, a window on one layer, head size 40 (the any-size attention path), 3 rows of unequal contexts
    over scattered blocks. The hidden states and both caches must be equal bit for bit."""
    gen = torch.Generator().manual_seed(0)
    cfg = ModelConfig(hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      head_dim=40, intermediate_size=72, vocab_size=8, max_position_embeddings=64, qkv_bias=True,
                      o_bias=True, mlp_bias=True, layer_windows=(None, 5))
    model = LlamaModel(cfg, torch.float32, 64)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, Linear):
                setattr(parent, name, PanelLinear(child, native))
    blocks, block_size, lens = 12, 4, [9, 2, 17]
    tables = torch.tensor([[7, 2, 9, 0, 0], [4, 0, 0, 0, 0], [11, 1, 5, 8, 3]])
    slots = torch.tensor([int(t[(n - 1) // block_size]) * block_size + (n - 1) % block_size
                          for t, n in zip(tables, lens, strict=True)])
    caches = [torch.randn(2, blocks, block_size, 2, 40, generator=gen) for _ in range(2)]
    x = torch.randn(3, 48, generator=gen)
    positions = torch.tensor(lens) - 1
    outs = []
    for one_call in (True, False):
        meta = PagedMeta(slot_mapping=slots, num_decodes=3, block_tables=tables, lens=torch.tensor(lens),
                         native=native)
        attn = PagedAttention(caches[0].clone(), caches[1].clone(), meta)
        h = x.clone()
        h = (decode_layers_forward if one_call else layer_by_layer)(native, model, h, positions, attn)
        outs.append((h, attn.k_cache, attn.v_cache))
    return all(torch.equal(a, b) for a, b in zip(*outs, strict=True)) and bool(outs[0][0].isfinite().all())
