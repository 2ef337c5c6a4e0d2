"""ModelConfig: the LLaMA-family shape read from a Hugging Face `config.json`.

Reads both transformers-5 keys (`rope_parameters`, `dtype`) and the older
ones (`rope_scaling`, `rope_theta`, `torch_dtype`). Only decoder-only
LLaMA-style models (RMSNorm, RoPE, GQA, SwiGLU) are accepted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUPPORTED_ARCHS = ("LlamaForCausalLM",)
ROPE_TYPES = ("default", "linear", "dynamic", "llama3", "yarn")


class ModelConfigError(ValueError):
    """config.json is missing, unreadable or describes a model own_engine cannot run."""


@dataclass(frozen=True)
class ModelConfig:
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    rope_scaling: dict[str, Any] = field(default_factory=dict)  # {"rope_type": ..., "factor": ..., ...}
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    dtype: str = "float32"

    def __post_init__(self) -> None:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ModelConfigError(f"num_attention_heads={self.num_attention_heads} is not a multiple of "
                                   f"num_key_value_heads={self.num_key_value_heads}")
        if self.rope_type not in ROPE_TYPES:
            raise ModelConfigError(f"rope type '{self.rope_type}' is not supported; supported: {', '.join(ROPE_TYPES)}")

    @property
    def rope_type(self) -> str:
        return str(self.rope_scaling.get("rope_type", self.rope_scaling.get("type", "default")))

    @property
    def q_size(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_key_value_heads * self.head_dim

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        archs = d.get("architectures") or ["LlamaForCausalLM"]
        if d.get("model_type", "llama") != "llama" or archs[0] not in SUPPORTED_ARCHS:
            raise ModelConfigError(f"model type {d.get('model_type')}/{archs[0]} is not supported; "
                                   "own_engine runs LLaMA-family decoders (model_type 'llama')")
        try:
            n_heads = int(d["num_attention_heads"])
            hidden = int(d["hidden_size"])
            rope = dict(d.get("rope_parameters") or d.get("rope_scaling") or {})
            theta = float(rope.pop("rope_theta", d.get("rope_theta", 10000.0)))
            if rope.get("rope_type", rope.get("type", "default")) == "default":
                rope = {}
            eos = d.get("eos_token_id")
            eos_ids = tuple(eos) if isinstance(eos, list) else (() if eos is None else (int(eos),))
            return cls(
                hidden_size=hidden, num_hidden_layers=int(d["num_hidden_layers"]), num_attention_heads=n_heads,
                num_key_value_heads=int(d.get("num_key_value_heads") or n_heads),
                head_dim=int(d.get("head_dim") or hidden // n_heads),
                intermediate_size=int(d["intermediate_size"]), vocab_size=int(d["vocab_size"]),
                max_position_embeddings=int(d.get("max_position_embeddings", 2048)),
                rms_norm_eps=float(d.get("rms_norm_eps", 1e-5)), rope_theta=theta, rope_scaling=rope,
                tie_word_embeddings=bool(d.get("tie_word_embeddings", False)),
                attention_bias=bool(d.get("attention_bias", False)),
                mlp_bias=bool(d.get("mlp_bias", False)),
                bos_token_id=d.get("bos_token_id"), eos_token_ids=eos_ids,
                dtype=str(d.get("dtype") or d.get("torch_dtype") or "float32"),
            )
        except KeyError as e:
            raise ModelConfigError(f"config.json lacks the key {e}; is this a LLaMA-family model?") from None

    @classmethod
    def from_path(cls, model_path: str | Path) -> ModelConfig:
        path = Path(model_path) / "config.json"
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except FileNotFoundError:
            raise ModelConfigError(f"{path} not found; point at a Hugging Face model folder "
                                   "or create one with `advisor models create NAME --preset tiny`") from None
        except json.JSONDecodeError as e:
            raise ModelConfigError(f"{path} is not valid JSON ({e}); recreate the model folder") from None
