"""The LLaMA-family decoder (RMSNorm, RoPE, GQA, SwiGLU) over flat token batches: LLaMA, Qwen2, Mistral.

Tokens of all sequences in a step are one flat [T] batch; where attention
keys come from (no cache, the paged cache, a contiguous static cache) is the
job of an attention backend (`own_engine.model.attention`) passed to `forward`.
q/k/v and gate/up are fused into one matmul each (as in nano-vllm); the
loader splits the Hugging Face tensors into them. The families differ only in
which projections carry a bias and in per-layer sliding windows (see
`model_cache.config`); a layer with a window passes it to the backend.
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from model_cache.config import ModelConfig
from own_engine.model.attention import sdpa_backends
from own_engine.model.rope import apply_rope, rope_cache


class AttentionBackend(Protocol):
    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 window: int | None = None) -> torch.Tensor:
        """q [T, Hq, D], k/v [T, Hkv, D] (already rotated) -> [T, Hq, D].

        `window`: the layer's sliding window (a query at position p sees keys p-window+1 .. p); None = causal.
        """
        ...


class DecoderStack(Protocol):
    def __call__(self, model: LlamaModel, x: torch.Tensor, positions: torch.Tensor,
                 attn: AttentionBackend) -> torch.Tensor:
        """x [T, hidden] after the embedding -> x after every decoder layer."""
        ...


def torch_layers(model: LlamaModel, x: torch.Tensor, positions: torch.Tensor, attn: AttentionBackend) -> torch.Tensor:
    """Every decoder layer on PyTorch ops over any attention backend: the model's own decoder stack."""
    cs = model.rope[positions].to(model.dtype)  # [T, 2, D]: cos, signed sin (in the model dtype, as HF does)
    cos, sin = cs[:, :1], cs[:, 1:]
    for i, layer in enumerate(model.layers):
        x = layer(i, x, cos, sin, attn)
    return x


class Linear(nn.Module):
    """nn.Linear without its (slow, pointless here) random init: weights always come from the loader."""

    def __init__(self, n_in: int, n_out: int, bias: bool, dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_out, n_in, dtype=dtype), requires_grad=False)
        self.bias = nn.Parameter(torch.empty(n_out, dtype=dtype), requires_grad=False) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float, dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, dtype=dtype), requires_grad=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32:
            return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
        # the same order of operations as transformers' LlamaRMSNorm, for bit-closeness in bf16/fp16
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig, dtype: torch.dtype, window: int | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.window = window
        h = cfg.hidden_size
        self.qkv_proj = Linear(h, cfg.q_size + 2 * cfg.kv_size, cfg.qkv_bias, dtype)
        self.o_proj = Linear(cfg.q_size, h, cfg.o_bias, dtype)
        self.gate_up_proj = Linear(h, 2 * cfg.intermediate_size, cfg.mlp_bias, dtype)
        self.down_proj = Linear(cfg.intermediate_size, h, cfg.mlp_bias, dtype)
        self.input_layernorm = RMSNorm(h, cfg.rms_norm_eps, dtype)
        self.post_attention_layernorm = RMSNorm(h, cfg.rms_norm_eps, dtype)

    def forward(self, idx: int, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                attn: AttentionBackend) -> torch.Tensor:
        cfg = self.cfg
        t = x.shape[0]
        qkv = self.qkv_proj(self.input_layernorm(x))
        hq, hkv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        # q and k heads rotated together in one pass: [T, Hq + Hkv, D]
        qk = apply_rope(qkv[:, : cfg.q_size + cfg.kv_size].view(t, hq + hkv, d), cos, sin)
        q, k = qk[:, :hq], qk[:, hq:]
        v = qkv[:, cfg.q_size + cfg.kv_size:].view(t, hkv, d)
        o = (attn(idx, q, k, v) if self.window is None else attn(idx, q, k, v, window=self.window)).reshape(t, cfg.q_size)
        x = x + self.o_proj(o)
        gate, up = self.gate_up_proj(self.post_attention_layernorm(x)).chunk(2, dim=-1)
        return x + self.down_proj(F.silu(gate) * up)


class LlamaModel(nn.Module):
    """Decoder + LM head. `forward` returns fp32 logits for the rows picked by `logits_indices`."""

    def __init__(self, cfg: ModelConfig, dtype: torch.dtype, max_model_len: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.dtype = dtype
        self.max_model_len = max_model_len
        self.embed_tokens = nn.Parameter(torch.empty(cfg.vocab_size, cfg.hidden_size, dtype=dtype), requires_grad=False)
        self.layers = nn.ModuleList(DecoderLayer(cfg, dtype, cfg.window(i)) for i in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps, dtype)
        self.lm_head = None if cfg.tie_word_embeddings else Linear(cfg.hidden_size, cfg.vocab_size, False, dtype)
        self.register_buffer("rope", rope_cache(cfg, max_model_len), persistent=False)  # [max_len, 2, D] fp32
        # the kernel backend chosen once at load may put its own decoder stack here (own_engine.kernels.backends)
        self.decoder: DecoderStack = torch_layers

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, attn: AttentionBackend,
                logits_indices: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids/positions [T] -> logits [N, vocab] fp32 (N = T when logits_indices is None)."""
        x = F.embedding(input_ids, self.embed_tokens)
        with sdpa_backends(x.device):  # never cuDNN's attention on a GPU: a plan build per new shape (attention.py)
            x = self.decoder(self, x, positions, attn)
        if logits_indices is not None:
            x = x[logits_indices]
        x = self.norm(x)
        return (F.linear(x, self.embed_tokens) if self.lm_head is None else self.lm_head(x)).float()
