"""Model presets for `advisor models create`: LLaMA, Qwen2 and Mistral shapes with seeded random weights.

`tiny` (~1M parameters) is the embedded default for `advisor bench` and the
tests; `small-100m` is the ENGINE_NOTES reference shape; `llama-1b` follows
LLaMA-3.2-1B (with a 32000-token vocab). The `tiny-<family>` presets are the
tiny shape as each family ships it: architecture, biases, sliding window, tied
embeddings and tokenizer kind (`model_cache.tokenizer`). Every vocab size
differs from every projection width, because some converters find the LM head
by output width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from model_cache.tokenizer import TOKENIZER_KINDS

Family = Literal["llama", "qwen2", "mistral"]


@dataclass(frozen=True)
class Preset:
    name: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    dtype: Literal["float32", "bfloat16", "float16"]
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    summary: str = ""
    family: Family = "llama"
    tokenizer: str = "bpe-gpt2"  # an model_cache.tokenizer kind
    sliding_window: int | None = None  # mistral: every layer; qwen2: the layers from max_window_layers on
    max_window_layers: int = 0  # qwen2 only

    def __post_init__(self) -> None:
        assert self.tokenizer in TOKENIZER_KINDS, self
        assert self.sliding_window is None or self.family in ("mistral", "qwen2"), self
        assert self.hidden_size % self.num_attention_heads == 0, self
        assert self.num_attention_heads % self.num_key_value_heads == 0, self
        widths = {self.hidden_size, self.intermediate_size, self.head_dim * self.num_key_value_heads,
                  2 * self.intermediate_size, self.hidden_size + 2 * self.head_dim * self.num_key_value_heads}
        assert self.vocab_size not in widths, f"{self.name}: vocab size equals a projection width"

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def n_params(self) -> int:
        """Parameter count (embeddings counted once when tied)."""
        h, kv = self.hidden_size, self.head_dim * self.num_key_value_heads
        per_layer = h * h * 2 + h * kv * 2 + 3 * h * self.intermediate_size + 2 * h
        if self.family == "qwen2":
            per_layer += h + 2 * kv  # q/k/v biases
        emb = self.vocab_size * h * (1 if self.tie_word_embeddings else 2)
        return emb + self.num_hidden_layers * per_layer + h


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("tiny", hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
           intermediate_size=352, vocab_size=2048, max_position_embeddings=4096, tie_word_embeddings=False,
           dtype="float32", summary="~1M params; tests and the default model of `advisor bench`"),
    Preset("small-100m", hidden_size=768, num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4,
           intermediate_size=2048, vocab_size=16000, max_position_embeddings=2048, tie_word_embeddings=False,
           dtype="float32", summary="~100M params; the ENGINE_NOTES CPU reference shape"),
    Preset("llama-1b", hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
           intermediate_size=8192, vocab_size=32000, max_position_embeddings=4096, tie_word_embeddings=True,
           dtype="bfloat16", rope_theta=500000.0,
           summary="~1B params, LLaMA-3.2-1B-like shape (32k vocab), bf16; GPU benchmarks"),
    *(Preset(name, hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=352, vocab_size=2048, max_position_embeddings=4096, dtype="float32", **kw)
      for name, kw in (
        ("tiny-llama2", dict(tie_word_embeddings=False, tokenizer="spm-bpe",
                             summary="tiny Llama-2/TinyLlama: SentencePiece-style BPE with byte fallback")),
        ("tiny-llama3", dict(tie_word_embeddings=False, tokenizer="bpe-llama3", rope_theta=500000.0,
                             summary="tiny Llama-3: byte-level BPE with Llama-3's pre-tokenizer")),
        ("tiny-qwen2", dict(tie_word_embeddings=True, family="qwen2", tokenizer="bpe-qwen2", rms_norm_eps=1e-6,
                            rope_theta=1000000.0,
                            summary="tiny Qwen2.5: q/k/v bias, tied embeddings, Qwen2's byte-level BPE")),
        ("tiny-mistral", dict(tie_word_embeddings=False, family="mistral", tokenizer="spm-bpe", sliding_window=64,
                              summary="tiny Mistral-7B-v0.1: sliding-window attention (64 tokens), SentencePiece BPE")),
      )),
)}


def get_preset(name: str) -> Preset:
    """The preset called `name`; a ValueError listing the valid names otherwise."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset '{name}'; choose one of: {', '.join(PRESETS)}")
    return PRESETS[name]
