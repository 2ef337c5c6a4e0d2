"""A plain-torch LLaMA forward with explicit KV-cache tensors, written to be traced into OpenVINO.

Why not trace transformers' model: optimum-intel, the usual route, patches
transformers' cache and mask code before tracing and pins transformers < 5.6,
so it cannot share this venv (tracing transformers 5 directly was not
attempted). This module computes the same function as
LlamaForCausalLM from the same safetensors and exposes the interface
openvino-genai's pipelines expect of a stateful LLM: inputs input_ids,
attention_mask, position_ids, beam_idx and past_key_values.{i}.key/value,
outputs logits and present.{i}.key/value, with attention as
`F.scaled_dot_product_attention` (so OpenVINO's SDPA-to-PagedAttention pass
can turn it into its continuous-batching form). Qwen2 and Mistral differ only
in q/k/v biases (taken from the weights when present) and sliding windows
(added to the mask per layer; the continuous-batching form drops that mask,
so `adapters.formats.limits.openvino` caps their context at the window).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class TraceableLlama(nn.Module):
    def __init__(self, cfg: dict, weights: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.n_layers = cfg["num_hidden_layers"]
        self.n_head = cfg["num_attention_heads"]
        self.n_kv = cfg.get("num_key_value_heads", self.n_head)
        self.head_dim = cfg.get("head_dim") or cfg["hidden_size"] // self.n_head
        self.eps = float(cfg.get("rms_norm_eps", 1e-5))
        rope = cfg.get("rope_parameters") or {}
        theta = float(cfg.get("rope_theta") or rope.get("rope_theta", 10000.0))
        inv = 1.0 / theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim)
        self.register_buffer("inv_freq", inv, persistent=False)
        self.w = nn.ParameterDict({k.replace(".", "__"): nn.Parameter(v.float(), requires_grad=False)
                                   for k, v in weights.items()})
        self.tied = "lm_head.weight" not in weights or cfg.get("tie_word_embeddings", False)
        from model_cache.config import ModelConfig

        self.windows = [ModelConfig.from_dict(cfg).window(i) for i in range(self.n_layers)]

    def p(self, name: str) -> torch.Tensor:
        return self.w[name.replace(".", "__")]

    def linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        """x @ W.T (+ b where the checkpoint has a bias: Qwen2's q/k/v, LLaMA's attention_bias)."""
        key = (name + ".bias").replace(".", "__")
        return F.linear(x, self.p(name + ".weight"), self.w[key] if key in self.w else None)

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * weight

    @staticmethod
    def _rotate_half(x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                beam_idx: torch.Tensor, *past: torch.Tensor) -> tuple[torch.Tensor, ...]:
        # input_ids [B, T]; attention_mask [B, P+T]; position_ids [B, T]; past: 2*L tensors [B, n_kv, P, hd]
        b, t = input_ids.shape
        x = F.embedding(input_ids, self.p("model.embed_tokens.weight"))
        freqs = position_ids.float().unsqueeze(-1) * self.inv_freq  # [B, T, hd/2]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)  # [B, 1, T, hd]
        p_len = past[0].shape[2]
        total = p_len + t
        # causal + padding mask [B, 1, T, P+T] as additive float
        q_pos = torch.arange(t).unsqueeze(1) + p_len
        k_pos = torch.arange(total).unsqueeze(0)
        allowed = (k_pos <= q_pos).unsqueeze(0).unsqueeze(0) & attention_mask[:, None, None, :].bool()
        masks: dict[int | None, torch.Tensor] = {}
        for w in set(self.windows):
            ok = allowed if w is None else allowed & (k_pos > q_pos - w)
            masks[w] = torch.zeros(ok.shape, dtype=torch.float32).masked_fill(~ok, torch.finfo(torch.float32).min)
        presents: list[torch.Tensor] = []
        rep = self.n_head // self.n_kv
        for i in range(self.n_layers):
            pre = f"model.layers.{i}."
            h = self._norm(x, self.p(pre + "input_layernorm.weight"))
            q = self.linear(h, pre + "self_attn.q_proj").view(b, t, self.n_head, self.head_dim).transpose(1, 2)
            k = self.linear(h, pre + "self_attn.k_proj").view(b, t, self.n_kv, self.head_dim).transpose(1, 2)
            v = self.linear(h, pre + "self_attn.v_proj").view(b, t, self.n_kv, self.head_dim).transpose(1, 2)
            q = q * cos + self._rotate_half(q) * sin
            k = k * cos + self._rotate_half(k) * sin
            pk = past[2 * i].index_select(0, beam_idx)
            pv = past[2 * i + 1].index_select(0, beam_idx)
            k = torch.cat((pk, k), dim=2)
            v = torch.cat((pv, v), dim=2)
            presents += [k, v]
            kr = k[:, :, None].expand(b, self.n_kv, rep, total, self.head_dim).reshape(b, self.n_head, total, self.head_dim)
            vr = v[:, :, None].expand(b, self.n_kv, rep, total, self.head_dim).reshape(b, self.n_head, total, self.head_dim)
            a = F.scaled_dot_product_attention(q, kr, vr, attn_mask=masks[self.windows[i]])
            x = x + self.linear(a.transpose(1, 2).reshape(b, t, -1), pre + "self_attn.o_proj")
            h = self._norm(x, self.p(pre + "post_attention_layernorm.weight"))
            g = F.linear(h, self.p(pre + "mlp.gate_proj.weight"))
            u = F.linear(h, self.p(pre + "mlp.up_proj.weight"))
            x = x + F.linear(F.silu(g) * u, self.p(pre + "mlp.down_proj.weight"))
        x = self._norm(x, self.p("model.norm.weight"))
        head = self.p("model.embed_tokens.weight") if self.tied else self.p("lm_head.weight")
        return (F.linear(x, head), *presents)
