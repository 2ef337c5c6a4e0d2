"""`advisor models create`: write a seeded random-weight LLaMA/Qwen2/Mistral model in the Hugging Face layout.

The folder holds model.safetensors, config.json (old and new transformers
keys), generation_config.json and a tokenizer trained offline (the preset's
kind, or `tokenizer=`), and loads in `transformers` offline. Same preset +
seed (+ tokenizer) -> the same bytes. The LM-head rows of the special tokens
and of every token that does not decode to printable text (unprintable byte
tokens) are zero, so greedy decoding of a random model never emits them and
every output token decodes to printable text. Biases (Qwen2's q/k/v) are
random, so a converter that drops one is caught by the logit checks.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import zlib
from pathlib import Path

from model_cache import staging, tokenizer_spm
from model_cache.paths import RECIPE, check_model_name, is_model_dir, models_root
from model_cache.presets import Preset, get_preset
from model_cache.tokenizer import byte_level, special_tokens_map, tokenizer_config, tokenizer_spec

INIT_STD = 0.02


def create_model(name: str, preset: str, *, seed: int = 0, root: Path | None = None, force: bool = False,
                 dtype: str | None = None, tokenizer: str | None = None) -> Path:
    """Write model `name` from `preset` under `root` (default: the model cache); returns its folder.

    `tokenizer` overrides the preset's tokenizer kind (see `model_cache.tokenizer.TOKENIZER_KINDS`).
    """
    check_model_name(name)
    p = get_preset(preset)
    if tokenizer is not None:
        tokenizer_spec(tokenizer)  # refuses an unknown kind, listing the valid ones
        p = dataclasses.replace(p, tokenizer=tokenizer)
    dtype = dtype or p.dtype
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"unknown dtype '{dtype}'; choose float32, bfloat16 or float16")
    root = Path(root) if root is not None else models_root()
    target = root / name
    staging.sweep(root, is_model_dir)  # what killed writers left (model_cache.staging), before judging the target
    if target.exists() and not force:
        raise FileExistsError(f"{target} already exists; pass --force (force=True) to overwrite it")
    root.mkdir(parents=True, exist_ok=True)
    tmp = staging.stage(target)  # written aside, then swapped in: never half a model, never none
    try:
        _write(tmp, p, seed, dtype)
        for f in tmp.iterdir():
            f.chmod(0o644)
        if force or not target.exists():
            staging.swap_in(tmp, target)
        elif is_model_dir(target):
            shutil.rmtree(tmp)  # another process created the same model meanwhile: keep theirs
        else:
            raise FileExistsError(f"{target} appeared while the model was written; pass --force to overwrite it")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


_ARCHS = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "mistral": "MistralForCausalLM"}


def hf_config(p: Preset, dtype: str, seed: int) -> dict:
    """config.json with both transformers-5 (`rope_parameters`, `dtype`) and older keys, in the family's layout."""
    spec = tokenizer_spec(p.tokenizer)
    cfg = {
        "architectures": [_ARCHS[p.family]], "model_type": p.family,
        "hidden_size": p.hidden_size, "intermediate_size": p.intermediate_size,
        "num_attention_heads": p.num_attention_heads, "num_hidden_layers": p.num_hidden_layers,
        "num_key_value_heads": p.num_key_value_heads, "head_dim": p.head_dim, "vocab_size": p.vocab_size,
        "max_position_embeddings": p.max_position_embeddings, "rms_norm_eps": p.rms_norm_eps,
        "rope_theta": p.rope_theta, "rope_scaling": None,
        "rope_parameters": {"rope_type": "default", "rope_theta": p.rope_theta},
        "tie_word_embeddings": p.tie_word_embeddings, "attention_dropout": 0.0,
        "hidden_act": "silu", "initializer_range": INIT_STD, "use_cache": True,
        "bos_token_id": spec.id_of(spec.bos), "eos_token_id": spec.id_of(spec.eos),
        "torch_dtype": dtype, "dtype": dtype,
        "advisor": {"preset": p.name, "recipe": RECIPE, "seed": seed, "n_params": p.n_params, "tokenizer": p.tokenizer},
    }
    if spec.pad is not None:
        cfg["pad_token_id"] = spec.id_of(spec.pad)
    if p.family == "llama":
        cfg.update({"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1})
    elif p.family == "mistral":
        cfg["sliding_window"] = p.sliding_window
    else:  # qwen2
        cfg.update({"use_sliding_window": p.sliding_window is not None, "sliding_window": p.sliding_window,
                    "max_window_layers": p.max_window_layers})
    return cfg


def random_weights(p: Preset, seed: int, dtype: str, silent_ids: list[int]) -> dict:
    """Seeded N(0, 0.02) weights in Hugging Face names; norms are ones; `silent_ids` get zero LM-head rows."""
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
    if p.family == "qwen2":  # drawn after the rest, so the other tensors equal those of the same LLaMA shape
        for i in range(p.num_hidden_layers):
            pre = f"model.layers.{i}.self_attn."
            # larger than the weights: a dropped bias moves the logits far beyond any conversion tolerance
            w[pre + "q_proj.bias"] = rnd(h) * 10
            w[pre + "k_proj.bias"] = rnd(kv) * 10
            w[pre + "v_proj.bias"] = rnd(kv) * 10
    w["model.norm.weight"] = torch.ones(h, dtype=tdtype)
    head = w["model.embed_tokens.weight"] if p.tie_word_embeddings else rnd(p.vocab_size, h)
    head[silent_ids] = 0  # they score 0 while some normal token scores > 0: greedy never picks them
    if not p.tie_word_embeddings:
        w["lm_head.weight"] = head
    return w


def silent_token_ids(tok, n_specials: int) -> list[int]:
    """Specials, and tokens whose text alone is not complete printable ASCII (unprintable byte tokens)."""
    texts = tok.decode_batch([[i] for i in range(tok.get_vocab_size())], skip_special_tokens=False)
    return [i for i, s in enumerate(texts)
            if i < n_specials or not s or not all(c == "\n" or " " <= c <= "~" for c in s)]


def _write(folder: Path, p: Preset, seed: int, dtype: str) -> None:
    from safetensors.torch import save_file

    spec = tokenizer_spec(p.tokenizer)
    tok = build_tokenizer(p.vocab_size, kind=p.tokenizer)  # one tokenizer per vocab size, whatever the weights seed
    tok.save(str(folder / "tokenizer.json"))
    weights = random_weights(p, seed, dtype, silent_token_ids(tok, len(spec.specials)))
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    cfg = hf_config(p, dtype, seed)
    gen = {k: cfg[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in cfg}
    files = {
        "config.json": cfg,
        "generation_config.json": {**gen, "do_sample": False},
        "tokenizer_config.json": tokenizer_config(p.max_position_embeddings, p.tokenizer),
        "special_tokens_map.json": special_tokens_map(p.tokenizer),
    }
    for fname, obj in files.items():
        (folder / fname).write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def build_tokenizer(vocab_size: int, *, kind: str = "bpe-gpt2", seed: int = 0):  # -> tokenizers.Tokenizer
    """A `kind` tokenizer with exactly `vocab_size` tokens (the kind's specials first): byte-level kinds by
    `tokenizer.byte_level`, the SentencePiece-style and refusal-test kinds by `tokenizer_spm`."""
    spec = tokenizer_spec(kind)
    if kind in ("spm-bpe", "unigram", "wordlevel"):
        return tokenizer_spm.build(spec, vocab_size, seed)
    return byte_level(spec, vocab_size, seed)
