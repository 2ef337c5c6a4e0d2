"""`advisor models create`: write a seeded random-weight LLaMA model in the Hugging Face layout.

The folder holds model.safetensors, config.json (old and new transformers
keys), generation_config.json and a tokenizer trained offline, and loads in
`transformers` offline. Same preset + seed -> the same bytes. The LM-head rows
of the special tokens are zero, so greedy decoding of a random model never
emits BOS/EOS/PAD and every output token decodes to printable text.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import zlib
from pathlib import Path

from own_engine.paths import is_model_dir, models_root
from own_engine.presets import Preset, get_preset
from own_engine.tokenizer import SPECIAL_TOKENS, build_tokenizer, special_tokens_map, tokenizer_config

INIT_STD = 0.02
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def create_model(name: str, preset: str, *, seed: int = 0, root: Path | None = None, force: bool = False,
                 dtype: str | None = None) -> Path:
    """Write model `name` from `preset` under `root` (default: the model cache); returns its folder."""
    if not _NAME.match(name):
        raise ValueError(f"model name '{name}' must be a plain folder name (letters, digits, '.', '_', '-')")
    p = get_preset(preset)
    dtype = dtype or p.dtype
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"unknown dtype '{dtype}'; choose float32, bfloat16 or float16")
    root = Path(root) if root is not None else models_root()
    target = root / name
    if target.exists() and not force:
        raise FileExistsError(f"{target} already exists; pass --force (force=True) to overwrite it")
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))  # written aside, then renamed: never half a model
    try:
        _write(tmp, p, seed, dtype)
        for f in tmp.iterdir():
            f.chmod(0o644)
        tmp.chmod(0o755)  # mkdtemp makes it private; a model cache is ordinary user data
        if force and target.exists():
            shutil.rmtree(target)
        try:
            os.replace(tmp, target)
        except OSError:
            if not is_model_dir(target):
                raise
            shutil.rmtree(tmp)  # another process created the same model meanwhile: keep theirs
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def hf_config(p: Preset, dtype: str, seed: int) -> dict:
    """config.json with both transformers-5 (`rope_parameters`, `dtype`) and older keys."""
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": p.hidden_size, "intermediate_size": p.intermediate_size,
        "num_attention_heads": p.num_attention_heads, "num_hidden_layers": p.num_hidden_layers,
        "num_key_value_heads": p.num_key_value_heads, "head_dim": p.head_dim, "vocab_size": p.vocab_size,
        "max_position_embeddings": p.max_position_embeddings, "rms_norm_eps": p.rms_norm_eps,
        "rope_theta": p.rope_theta, "rope_scaling": None,
        "rope_parameters": {"rope_type": "default", "rope_theta": p.rope_theta},
        "tie_word_embeddings": p.tie_word_embeddings, "attention_bias": False, "attention_dropout": 0.0,
        "mlp_bias": False, "hidden_act": "silu", "initializer_range": INIT_STD, "pretraining_tp": 1,
        "use_cache": True, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2,
        "torch_dtype": dtype, "dtype": dtype,
        "advisor": {"preset": p.name, "seed": seed, "n_params": p.n_params},
    }


def random_weights(p: Preset, seed: int, dtype: str) -> dict:
    """Seeded N(0, 0.02) weights in Hugging Face names; norms are ones."""
    import torch

    tdtype = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(zlib.crc32(f"{p.name}:{seed}".encode()))
    h, kv, inter = p.hidden_size, p.head_dim * p.num_key_value_heads, p.intermediate_size

    def rnd(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen) * INIT_STD).to(tdtype)

    w = {"model.embed_tokens.weight": rnd(p.vocab_size, h)}
    for i in range(p.num_hidden_layers):
        pre = f"model.layers.{i}."
        w[pre + "self_attn.q_proj.weight"] = rnd(h, h)
        w[pre + "self_attn.k_proj.weight"] = rnd(kv, h)
        w[pre + "self_attn.v_proj.weight"] = rnd(kv, h)
        w[pre + "self_attn.o_proj.weight"] = rnd(h, h)
        w[pre + "mlp.gate_proj.weight"] = rnd(inter, h)
        w[pre + "mlp.up_proj.weight"] = rnd(inter, h)
        w[pre + "mlp.down_proj.weight"] = rnd(h, inter)
        w[pre + "input_layernorm.weight"] = torch.ones(h, dtype=tdtype)
        w[pre + "post_attention_layernorm.weight"] = torch.ones(h, dtype=tdtype)
    w["model.norm.weight"] = torch.ones(h, dtype=tdtype)
    head = w["model.embed_tokens.weight"] if p.tie_word_embeddings else rnd(p.vocab_size, h)
    head[: len(SPECIAL_TOKENS)] = 0  # specials score 0 while some normal token scores > 0: greedy never picks them
    if not p.tie_word_embeddings:
        w["lm_head.weight"] = head
    return w


def _write(folder: Path, p: Preset, seed: int, dtype: str) -> None:
    from safetensors.torch import save_file

    save_file(random_weights(p, seed, dtype), str(folder / "model.safetensors"), metadata={"format": "pt"})
    tok = build_tokenizer(p.vocab_size)  # one tokenizer per vocab size, whatever the weights seed
    tok.save(str(folder / "tokenizer.json"))
    files = {
        "config.json": hf_config(p, dtype, seed),
        "generation_config.json": {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2, "do_sample": False},
        "tokenizer_config.json": tokenizer_config(p.max_position_embeddings),
        "special_tokens_map.json": special_tokens_map(),
    }
    for fname, obj in files.items():
        (folder / fname).write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")
