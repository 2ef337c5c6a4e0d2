"""ModelConfig: the LLaMA-family shape read from a Hugging Face `config.json`.

Reads both transformers-5 keys (`rope_parameters`, `dtype`) and the older
ones (`rope_scaling`, `rope_theta`, `torch_dtype`). Decoder-only LLaMA-style
models (RMSNorm, RoPE, GQA, SwiGLU) of three families are accepted, with what
sets each apart in transformers: LLaMA (`attention_bias` on q/k/v *and* o),
Qwen2 (bias on q/k/v only; sliding windows on the layers at or past
`max_window_layers` when `use_sliding_window`) and Mistral (one
`sliding_window` for every layer). A window W means a query at position p
attends to keys at positions p-W+1 .. p (transformers' sliding-window mask).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# model_type -> the architecture transformers names for it
FAMILIES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "mistral": "MistralForCausalLM"}
SUPPORTED_ARCHS = tuple(FAMILIES.values())
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
    qkv_bias: bool = False  # bias on q/k/v projections (LLaMA attention_bias; always on in Qwen2)
    o_bias: bool = False  # bias on the output projection (LLaMA attention_bias only)
    mlp_bias: bool = False
    model_type: str = "llama"
    layer_windows: tuple[int | None, ...] = ()  # per layer: sliding-window size, None = full attention; () = all full
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    dtype: str = "float32"

    def __post_init__(self) -> None:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ModelConfigError(f"num_attention_heads={self.num_attention_heads} is not a multiple of "
                                   f"num_key_value_heads={self.num_key_value_heads}")
        if self.rope_type not in ROPE_TYPES:
            raise ModelConfigError(f"rope type '{self.rope_type}' is not supported; supported: {', '.join(ROPE_TYPES)}")
        if self.layer_windows and len(self.layer_windows) != self.num_hidden_layers:
            raise ModelConfigError(f"{len(self.layer_windows)} layer windows for {self.num_hidden_layers} layers")
        if any(w is not None and w < 1 for w in self.layer_windows):
            raise ModelConfigError(f"sliding window sizes must be >= 1, got {self.layer_windows}")

    def window(self, layer: int) -> int | None:
        """Layer `layer`'s sliding-window size, or None for full causal attention."""
        return self.layer_windows[layer] if self.layer_windows else None

    @property
    def sliding_window(self) -> int | None:
        """The smallest window of any layer (None: no layer slides): the longest context every layer sees whole."""
        sizes = [w for w in self.layer_windows if w is not None]
        return min(sizes) if sizes else None

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
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:  # hand-written: a shape no field states (HF config.json)
        model_type = str(d.get("model_type", "llama"))
        archs = d.get("architectures") or [FAMILIES.get(model_type, "?")]
        if model_type not in FAMILIES or archs[0] != FAMILIES[model_type]:
            raise ModelConfigError(f"model type {model_type}/{archs[0]} is not supported; own_engine runs "
                                   f"{', '.join(f'{t} ({a})' for t, a in FAMILIES.items())}")
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
                qkv_bias=model_type == "qwen2" or bool(d.get("attention_bias", False)),
                o_bias=model_type == "llama" and bool(d.get("attention_bias", False)),
                mlp_bias=model_type == "llama" and bool(d.get("mlp_bias", False)),
                model_type=model_type, layer_windows=_layer_windows(model_type, d),
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


def _layer_windows(model_type: str, d: dict[str, Any]) -> tuple[int | None, ...]:
    """Per-layer sliding windows as transformers derives them for each family (() when no layer slides)."""
    n_layers = int(d["num_hidden_layers"])
    window = d.get("sliding_window")
    if model_type == "mistral":
        return (int(window),) * n_layers if window else ()
    if model_type == "qwen2":
        if not d.get("use_sliding_window", False) or not window:
            return ()
        types = d.get("layer_types") or ["sliding_attention" if i >= int(d.get("max_window_layers", 28))
                                         else "full_attention" for i in range(n_layers)]
        out = tuple(int(window) if t == "sliding_attention" else None for t in types)
        return out if any(out) else ()
    return ()
