"""A dense decoder's shape, from the shipped table (`data/architectures.yaml`) or an HF `config.json`, without weights.

Families: Llama, Qwen2, Qwen3, Mistral, Gemma, Gemma2, Gemma3 (a multimodal config's `text_config` is read).
Refuses in one line (`SizingError`) a MoE config, a missing field, an unknown family or name, a bad file.
Not modelled: sliding-window layers (Gemma2/3, Mistral v0.1) are sized as full attention, so their KV cache is
an upper bound; vision towers of multimodal configs are not counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from advisor.sizing.errors import SizingError

FAMILIES = ("llama", "qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3")
_FAMILY_OF = {**{f: f for f in FAMILIES}, "gemma3_text": "gemma3"}
# transformers' config-class defaults (5.24, read from LlamaConfig() etc.): what a config.json may leave out
_DEFAULT_TIE = {"llama": False, "qwen2": False, "qwen3": False, "mistral": False,
                "gemma": True, "gemma2": True, "gemma3": True}
_DEFAULT_MAX_POSITIONS = {"llama": 2048, "qwen2": 32768, "qwen3": 32768, "mistral": 131072,
                          "gemma": 8192, "gemma2": 8192, "gemma3": 131072}
# Gemma3TextConfig's defaults: the 4B/12B configs leave heads, head_dim and vocabulary to them
_GEMMA3_TEXT_DEFAULTS = {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208}
REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
_MOE_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek", "dbrx", "jamba", "olmoe", "llama4", "gpt_oss")


@dataclass(frozen=True)
class Architecture:
    """The figures that size a dense decoder: parameters, KV cache per token, TP degrees."""

    name: str
    family: str  # model_type: llama, qwen2, qwen3, mistral, gemma, gemma2, gemma3
    source: str  # where the figures come from (the HF repo's config.json URL and date, or the file path)
    hidden_size: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int

    @property
    def q_size(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def linear_params_per_layer(self) -> int:
        """The projections a quantized checkpoint quantizes: q, k, v, o, gate, up, down."""
        h = self.hidden_size
        return 2 * h * self.q_size + 2 * h * self.kv_size + 3 * h * self.intermediate_size

    @property
    def params_per_layer(self) -> int:
        norms = (4 if self.family in ("gemma2", "gemma3") else 2) * self.hidden_size
        qk_norms = 2 * self.head_dim if self.family in ("qwen3", "gemma3") else 0
        qkv_bias = self.q_size + 2 * self.kv_size if self.family == "qwen2" else 0
        return self.linear_params_per_layer + norms + qk_norms + qkv_bias

    @property
    def embedding_params(self) -> int:
        """Input embeddings plus the lm_head when it is not tied to them."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def n_params(self) -> int:
        return self.embedding_params + self.n_layers * self.params_per_layer + self.hidden_size  # + final norm


def _int(config: dict[str, Any], key: str, where: str) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SizingError(f"{where}: `{key}` must be a positive whole number, got {value!r}")
    return value


def _experts(config: dict[str, Any]) -> int | None:
    for key in _EXPERT_KEYS:
        if isinstance(config.get(key), int) and config[key] > 1:
            return int(config[key])
    return None


def from_config(config: dict[str, Any], name: str, source: str) -> Architecture:
    """An Architecture from a parsed HF config.json (a multimodal one's `text_config` is read)."""
    outer_type = str(config.get("model_type", ""))
    text = config.get("text_config")
    if isinstance(text, dict):
        config = {**text, "model_type": text.get("model_type") or outer_type}
    model_type = str(config.get("model_type", outer_type))
    experts = _experts(config)
    is_moe_type = any(model_type.startswith(t) for t in _MOE_TYPES) or any(k.startswith("moe_") for k in config)
    if experts is not None or is_moe_type:
        count = f"{experts} experts" if experts is not None else f"a mixture of experts (model_type {model_type})"
        raise SizingError(f"MoE models are not sized yet (later work): {name} has {count}")
    family = _FAMILY_OF.get(model_type)
    if family is None:
        raise SizingError(f"{source}: model_type {model_type or '(missing)'!r} is not a supported dense family; "
                          f"supported: {', '.join(FAMILIES)}")
    if model_type == "gemma3_text":
        config = {**_GEMMA3_TEXT_DEFAULTS, **config}
    for key in REQUIRED:
        if key not in config:
            raise SizingError(f"{source}: the config has no `{key}` (a {family} config.json needs "
                              f"{', '.join(REQUIRED)})")
    hidden, heads = _int(config, "hidden_size", source), _int(config, "num_attention_heads", source)
    kv_heads = _int(config, "num_key_value_heads", source) if config.get("num_key_value_heads") is not None else heads
    if heads % kv_heads:
        raise SizingError(f"{source}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    if config.get("head_dim") is not None:
        head_dim = _int(config, "head_dim", source)
    elif hidden % heads:
        raise SizingError(f"{source}: no `head_dim`, and hidden_size {hidden} is not a multiple of {heads} heads")
    else:
        head_dim = hidden // heads
    max_positions = config.get("max_position_embeddings")
    return Architecture(
        name=name, family=family, source=source, hidden_size=hidden,
        n_layers=_int(config, "num_hidden_layers", source), n_heads=heads, n_kv_heads=kv_heads, head_dim=head_dim,
        intermediate_size=_int(config, "intermediate_size", source), vocab_size=_int(config, "vocab_size", source),
        tie_word_embeddings=bool(config.get("tie_word_embeddings", _DEFAULT_TIE[family])),
        max_position_embeddings=(_int(config, "max_position_embeddings", source) if max_positions is not None
                                 else _DEFAULT_MAX_POSITIONS[family]))


def _key(name: str) -> str:
    return " ".join(name.lower().replace("-", " ").replace("_", " ").split())


@cache
def _table() -> tuple[dict[str, Architecture], dict[str, str]]:
    text = resources.files("advisor.sizing").joinpath("data/architectures.yaml").read_text()
    by_name: dict[str, Architecture] = {}
    keys: dict[str, str] = {}
    for entry in yaml.safe_load(text)["architectures"]:
        arch = from_config(entry["config"], entry["name"], f"{entry['source']} (as of {entry['as_of']})")
        by_name[arch.name] = arch
        for alias in (entry["name"], entry["repo"], *entry.get("aliases", [])):
            keys[_key(alias)] = arch.name
    return by_name, keys


def shipped_architectures() -> dict[str, Architecture]:
    """The shipped table, by display name."""
    return dict(_table()[0])


def _load_file(path: Path) -> Architecture:
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise SizingError(f"{file}: no such file (give a config.json, a folder holding one, or a shipped name)")
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise SizingError(f"{file}: cannot be read ({e.__class__.__name__}: {e})") from None
    except json.JSONDecodeError as e:
        raise SizingError(f"{file}: not JSON (line {e.lineno}: {e.msg}); give an HF config.json") from None
    if not isinstance(config, dict):
        raise SizingError(f"{file}: an HF config.json is a JSON object, this is a {type(config).__name__}")
    folder = file.parent.name if file.name == "config.json" else file.stem
    return from_config(config, folder or str(file), str(file))


def load_architecture(name_or_path: str) -> Architecture:
    """A shipped name or HF repo id (any case), or a config.json path or a folder holding one."""
    by_name, keys = _table()
    found = keys.get(_key(name_or_path))
    if found is not None:
        return by_name[found]
    path = Path(name_or_path).expanduser()
    if path.exists() or name_or_path.endswith(".json") or ("/" in name_or_path and path.parent.is_dir()):
        return _load_file(path)
    raise SizingError(f"unknown model {name_or_path!r}: give a config.json path, or one of: {', '.join(by_name)}")

