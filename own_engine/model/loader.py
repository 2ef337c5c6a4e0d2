"""Load a Hugging Face LLaMA/Qwen2/Mistral folder (config.json + *.safetensors) into `LlamaModel`.

Safetensors only: a folder with only `pytorch_model.bin` is refused, because
unpickling a file can run arbitrary code. q/k/v and gate/up tensors are
copied into the fused weights; every expected tensor must be present.
"""

from __future__ import annotations

from pathlib import Path

import torch

from model_cache.config import ModelConfig
from own_engine.model.llama import LlamaModel
from own_engine.model.safetensors_read import SafetensorsFile, SafetensorsFormatError

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
           "float16": torch.float16, "fp16": torch.float16}


class ModelLoadError(RuntimeError):
    """The weights cannot be loaded; the message names the file and the fix."""


def resolve_dtype(dtype: str | torch.dtype, cfg: ModelConfig, device: torch.device) -> torch.dtype:
    """'auto' is fp32 on CPU (fast and exact there) and the checkpoint's dtype on CUDA."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        return torch.float32 if device.type == "cpu" else DTYPES.get(cfg.dtype, torch.float32)
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype '{dtype}'; choose auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


def safetensors_files(model_path: Path) -> list[Path]:
    files = sorted(model_path.glob("*.safetensors"))
    if not files:
        pickled = [p.name for p in model_path.glob("*.bin")] + [p.name for p in model_path.glob("*.pt")]
        hint = (f" (found {', '.join(pickled)}: pickled weights are never loaded; convert them to safetensors)"
                if pickled else "")
        raise ModelLoadError(f"no *.safetensors file in {model_path}{hint}")
    return files


def load_model(model_path: str | Path, *, device: torch.device | str = "cpu", dtype: str | torch.dtype = "auto",
               max_model_len: int | None = None) -> LlamaModel:
    """Build the model on `device` and fill it from the folder's safetensors files."""
    path = Path(model_path)
    cfg = ModelConfig.from_path(path)
    dev = torch.device(device)
    tdtype = resolve_dtype(dtype, cfg, dev)
    with dev:
        model = LlamaModel(cfg, tdtype, max_model_len or cfg.max_position_embeddings)
    targets = _targets(model)
    seen: set[str] = set()
    for file in safetensors_files(path):
        try:
            with SafetensorsFile(file) as f:  # plain reads, not a mapping: the load's peak memory is the weights
                for name in f.keys():
                    if name not in targets:
                        if name.endswith("rotary_emb.inv_freq") or name == "lm_head.weight":  # tied head
                            continue
                        raise ModelLoadError(f"{file}: unexpected tensor '{name}'; is this a LLaMA, Qwen2 or Mistral model?")
                    param, start, stop = targets[name]
                    tensor = f.get_tensor(name)
                    dst = param.data if start is None else param.data[start:stop]
                    if tuple(dst.shape) != tuple(tensor.shape):
                        raise ModelLoadError(f"{file}: tensor '{name}' has shape {tuple(tensor.shape)}, "
                                             f"config.json implies {tuple(dst.shape)}")
                    dst.copy_(tensor)
                    seen.add(name)
        except SafetensorsFormatError as e:
            raise ModelLoadError(f"{file} is not a readable safetensors file ({e}); "
                                 "re-create or re-download it") from None
    missing = sorted(set(targets) - seen)
    if missing:
        raise ModelLoadError(f"{path}: missing tensor(s) {', '.join(missing[:5])}"
                             f"{' ...' if len(missing) > 5 else ''}; the weights do not match config.json")
    return model.eval()


def _targets(model: LlamaModel) -> dict[str, tuple[torch.nn.Parameter, int | None, int | None]]:
    """HF tensor name -> (our parameter, row slice start, stop)."""
    cfg = model.cfg
    q, kv, inter = cfg.q_size, cfg.kv_size, cfg.intermediate_size
    t: dict[str, tuple[torch.nn.Parameter, int | None, int | None]] = {
        "model.embed_tokens.weight": (model.embed_tokens, None, None),
        "model.norm.weight": (model.norm.weight, None, None),
    }
    if model.lm_head is not None:
        t["lm_head.weight"] = (model.lm_head.weight, None, None)
    for i, layer in enumerate(model.layers):
        p = f"model.layers.{i}."
        for suffix in ("weight", "bias") if cfg.qkv_bias else ("weight",):
            fused = getattr(layer.qkv_proj, suffix)
            t[p + f"self_attn.q_proj.{suffix}"] = (fused, 0, q)
            t[p + f"self_attn.k_proj.{suffix}"] = (fused, q, q + kv)
            t[p + f"self_attn.v_proj.{suffix}"] = (fused, q + kv, q + 2 * kv)
        for suffix in ("weight", "bias") if cfg.o_bias else ("weight",):
            t[p + f"self_attn.o_proj.{suffix}"] = (getattr(layer.o_proj, suffix), None, None)
        for suffix in ("weight", "bias") if cfg.mlp_bias else ("weight",):
            fused = getattr(layer.gate_up_proj, suffix)
            t[p + f"mlp.gate_proj.{suffix}"] = (fused, 0, inter)
            t[p + f"mlp.up_proj.{suffix}"] = (fused, inter, 2 * inter)
            t[p + f"mlp.down_proj.{suffix}"] = (getattr(layer.down_proj, suffix), None, None)
        t[p + "input_layernorm.weight"] = (layer.input_layernorm.weight, None, None)
        t[p + "post_attention_layernorm.weight"] = (layer.post_attention_layernorm.weight, None, None)
    return t
