"""One engine step of a dense decoder on a tensor-parallel group, from measured operator times.

A step carries `decode` sequences that each add one token (attending to `context` cached tokens) and
`prefill` sequences that each add a chunk of `chunk` prompt tokens after `past` tokens already cached.
Per layer: the four GEMMs over every token of the step (QKV, output projection, gate+up, down, each
split across the TP group), generation attention for the decodes, context attention for the chunks, and
two all-reduces of the hidden state when TP > 1; once per step: the LM head over one token per sequence.
The engine's own host time per step is not in here (serving.py adds it): this is the GPU's time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from advisor.sizing.architecture import Architecture


class Ops(Protocol):
    """Operator times in ms on one GPU (measured tables, or tables transferred to another GPU)."""

    def gemm_ms(self, m: float, n: float, k: float, dtype: str) -> float: ...
    def context_attention_ms(self, batch: float, length: float, nh: int, nkv: int, hd: int, kv_fp8: bool) -> float: ...
    def generation_attention_ms(self, batch: float, context: float, nh: int, nkv: int, hd: int,
                                kv_fp8: bool) -> float: ...
    def allreduce_ms(self, elements: float, tp: int) -> float: ...


@dataclass(frozen=True)
class Parallel:
    """A model on a TP group: the per-GPU slice of every layer."""

    shape: Architecture
    tp: int
    gemm_dtype: str  # the linear layers' dtype in the tables: bfloat16, fp8, nvfp4, int4_wo
    kv_fp8: bool

    @property
    def heads(self) -> int:
        return self.shape.n_heads // self.tp

    @property
    def kv_heads(self) -> int:
        return max(1, self.shape.n_kv_heads // self.tp)  # fewer KV heads than GPUs: each GPU keeps a copy

    def gemms(self) -> tuple[tuple[int, int], ...]:
        """(n, k) of the layer's linear layers on one GPU: QKV, output, gate+up, down."""
        s, tp = self.shape, self.tp
        qkv = (s.n_heads + 2 * s.n_kv_heads) * s.head_dim // tp
        return ((qkv, s.hidden_size), (s.hidden_size, s.n_heads * s.head_dim // tp),
                (2 * s.intermediate_size // tp, s.hidden_size), (s.hidden_size, s.intermediate_size // tp))


@dataclass(frozen=True)
class StepParts:
    """Where one step's GPU time goes, in ms (all layers)."""

    gemm_ms: float
    attention_ms: float
    allreduce_ms: float
    lm_head_ms: float

    @property
    def total_ms(self) -> float:
        return self.gemm_ms + self.attention_ms + self.allreduce_ms + self.lm_head_ms


def step_parts(ops: Ops, p: Parallel, decode: float = 0.0, context: float = 0.0, prefill: float = 0.0,
               chunk: float = 0.0, past: float = 0.0) -> StepParts:
    """The GPU time of one step (see the module docstring); counts may be fractional averages."""
    tokens = decode + prefill * chunk
    assert tokens > 0, "an empty step"
    s = p.shape
    gemm = sum(ops.gemm_ms(tokens, n, k, p.gemm_dtype) for n, k in p.gemms())
    attn = 0.0
    if decode > 0:
        attn += ops.generation_attention_ms(decode, context, p.heads, p.kv_heads, s.head_dim, p.kv_fp8)
    if prefill > 0 and chunk > 0:
        # causal attention of `chunk` new tokens over `past + chunk`: the work of a fresh prompt of this length
        length = math.sqrt(chunk * chunk + 2.0 * chunk * past)
        attn += ops.context_attention_ms(prefill, length, p.heads, p.kv_heads, s.head_dim, p.kv_fp8)
    ar = 2.0 * ops.allreduce_ms(tokens * s.hidden_size, p.tp)
    sequences = decode + prefill
    lm_head = ops.gemm_ms(max(sequences, 1.0), s.vocab_size / p.tp, s.hidden_size, "bfloat16")
    return StepParts(s.n_layers * gemm, s.n_layers * attn, s.n_layers * ar, lm_head)
