"""HF LLaMA/Qwen2/Mistral folder -> GGUF for llama.cpp, written with llama.cpp's own `gguf` package.

fp32/fp16 files are written directly with `gguf.GGUFWriter`, as llama.cpp's
`convert_hf_to_gguf.py` does: LLaMA and Mistral as the `llama` architecture
(Q/K rotary permutation), Qwen2 as `qwen2` (NEOX rotary, no permutation, q/k/v
biases); a tied LM head is left out (llama.cpp reuses the embedding). The
vocabulary is written as what it is (`adapters.formats.gguf_vocab`). llama.cpp
has no sliding-window attention for these architectures, so a model with
windows gets the smallest window as its context length (`adapters.formats.limits`
says so). q8_0/q4_0 are made from the fp32 file with llama.cpp's quantizer
(`llama_cpp.llama_model_quantize`). Other architectures are refused.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from adapters.formats.check import ConversionError

PRECISIONS = ("fp32", "fp16", "q8_0", "q4_0")
ALIASES = {"int8": "q8_0", "int4": "q4_0", "f32": "fp32", "f16": "fp16"}
FILENAME = "model.gguf"

# llama.cpp's llama_ftype values (llama.h)
_FTYPE = {"fp32": 0, "fp16": 1, "q4_0": 2, "q8_0": 7}


def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's rotary layout: HF stores each head's rotary halves split; GGUF interleaves them."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def load_weights(model_path: Path) -> dict[str, np.ndarray]:
    """All safetensors tensors of the folder as fp32 numpy arrays."""
    import torch
    from safetensors.torch import load_file

    files = sorted(model_path.glob("*.safetensors"))
    if not files:
        raise ConversionError(f"{model_path} has no *.safetensors weights; point at a Hugging Face model folder")
    out: dict[str, np.ndarray] = {}
    for f in files:
        try:
            tensors = load_file(str(f))
        except Exception as e:  # safetensors raises several types for a truncated or garbled file
            raise ConversionError(f"cannot read weights {f}: {e}. The file is corrupt; re-create or re-download the model") from e
        for k, v in tensors.items():
            out[k] = v.to(torch.float32).numpy()
    return out


def _gguf() -> Any:
    try:
        import gguf
    except ImportError as e:
        raise ConversionError("GGUF conversion needs the gguf package: pip install -e '.[llamacpp]'") from e
    return gguf


def write_gguf(model_path: Path, out_file: Path, precision: str) -> dict[str, Any]:
    """Write fp32 or fp16 GGUF for the HF folder at `model_path`; returns what was written about the tokenizer."""
    gguf = _gguf()
    from adapters.formats import limits
    from adapters.formats.gguf_vocab import write_vocab

    assert precision in ("fp32", "fp16"), precision
    cfg = json.loads((model_path / "config.json").read_text())
    family = cfg.get("model_type")
    if family not in ("llama", "mistral", "qwen2"):
        raise ConversionError(f"GGUF writer supports model_type llama, mistral and qwen2, got {family!r}")
    arch = "qwen2" if family == "qwen2" else "llama"
    w = load_weights(model_path)
    n_head, n_kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hidden, vocab = cfg["hidden_size"], cfg["vocab_size"]
    head_dim = cfg.get("head_dim") or hidden // n_head
    rope = cfg.get("rope_parameters") or {}
    rope_theta = float(cfg.get("rope_theta") or rope.get("rope_theta", 10000.0))
    if (cfg.get("rope_scaling") or {}).get("rope_type", "default") not in ("default", None) or \
            rope.get("rope_type", "default") != "default":
        raise ConversionError("GGUF writer handles default RoPE only (no rope scaling)")

    wr = gguf.GGUFWriter(str(out_file), arch)
    wr.add_name(model_path.name)
    wr.add_context_length(limits.llama_cpp_context(cfg).max_context)
    wr.add_embedding_length(hidden)
    wr.add_block_count(cfg["num_hidden_layers"])
    wr.add_feed_forward_length(cfg["intermediate_size"])
    wr.add_head_count(n_head)
    wr.add_head_count_kv(n_kv)
    wr.add_key_length(head_dim)
    wr.add_value_length(head_dim)
    wr.add_rope_dimension_count(head_dim)
    wr.add_rope_freq_base(rope_theta)
    wr.add_layer_norm_rms_eps(float(cfg.get("rms_norm_eps", 1e-5)))
    wr.add_vocab_size(vocab)
    wr.add_file_type(_FTYPE[precision])
    written = write_vocab(wr, model_path, vocab)

    def put(name: str, arr: np.ndarray) -> None:
        half = precision == "fp16" and arr.ndim == 2
        wr.add_tensor(name, arr.astype(np.float16 if half else np.float32))

    def qk(arr: np.ndarray, heads: int) -> np.ndarray:
        return arr if arch == "qwen2" else _permute(arr, heads)  # qwen2 runs NEOX rotary: HF's own layout

    put("token_embd.weight", w["model.embed_tokens.weight"])
    put("output_norm.weight", w["model.norm.weight"])
    if "lm_head.weight" in w and not cfg.get("tie_word_embeddings", False):
        put("output.weight", w["lm_head.weight"])
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        put(f"blk.{i}.attn_norm.weight", w[p + "input_layernorm.weight"])
        put(f"blk.{i}.attn_q.weight", qk(w[p + "self_attn.q_proj.weight"], n_head))
        put(f"blk.{i}.attn_k.weight", qk(w[p + "self_attn.k_proj.weight"], n_kv))
        put(f"blk.{i}.attn_v.weight", w[p + "self_attn.v_proj.weight"])
        put(f"blk.{i}.attn_output.weight", w[p + "self_attn.o_proj.weight"])
        for name, heads in (("q", n_head), ("k", n_kv), ("v", 0)):
            bias = w.get(p + f"self_attn.{name}_proj.bias")
            if bias is not None:  # a permuted weight needs the same permutation of its bias rows
                put(f"blk.{i}.attn_{name}.bias", bias if heads == 0 else qk(bias, heads))
        if p + "self_attn.o_proj.bias" in w:
            put(f"blk.{i}.attn_output.bias", w[p + "self_attn.o_proj.bias"])
        put(f"blk.{i}.ffn_norm.weight", w[p + "post_attention_layernorm.weight"])
        put(f"blk.{i}.ffn_gate.weight", w[p + "mlp.gate_proj.weight"])
        put(f"blk.{i}.ffn_up.weight", w[p + "mlp.up_proj.weight"])
        put(f"blk.{i}.ffn_down.weight", w[p + "mlp.down_proj.weight"])
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    return written.to_dict()


def quantize(src: Path, dst: Path, precision: str, threads: int = 0) -> None:
    """Quantize an fp32 GGUF to q8_0/q4_0 with llama.cpp's own quantizer."""
    assert precision in ("q8_0", "q4_0"), precision
    try:
        import llama_cpp
    except ImportError as e:
        raise ConversionError("GGUF q8_0/q4_0 needs llama.cpp's quantizer: pip install -e '.[llamacpp]'") from e
    quiet()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = _FTYPE[precision]
    params.nthread = threads
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), params)
    if rc != 0 or not dst.is_file():
        raise ConversionError(f"llama.cpp quantization to {precision} failed (code {rc}); row lengths must be multiples of 32")


def quiet() -> None:
    """llama-cpp-python routes llama.cpp's log through this logger: errors only."""
    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)


def extra_buffers_default() -> bool:
    """Whether llama.cpp may use its extra (repacking) buffer types here.

    ggml's AMX kernels (used for q8_0/q4_0 weights on CPUs that advertise AMX)
    die with SIGILL in VMs that advertise AMX without enabling it, which
    kills the whole process; so they are off where the CPU advertises AMX.
    Pass `extra_buffers=True` to the adapter on hosts where AMX really works.
    """
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return True
    return "amx_tile" not in flags


def load(path: Path, *, n_ctx: int, n_batch: int, n_seq: int = 1, threads: int | None = None,
         kv_f32: bool = True, extra_buffers: bool | None = None, flash_attn: bool | None = None) -> tuple[Any, Any]:
    """(model, context) through llama.cpp's C API; raises ConversionError when it cannot load."""
    try:
        import llama_cpp as ll
    except ImportError as e:
        raise ConversionError("running a GGUF file needs llama-cpp-python: pip install -e '.[llamacpp]'") from e
    quiet()
    ll.llama_backend_init()
    mp = ll.llama_model_default_params()
    mp.n_gpu_layers = 0
    mp.use_extra_bufts = extra_buffers_default() if extra_buffers is None else extra_buffers
    model = ll.llama_model_load_from_file(str(path).encode(), mp)
    if not model:
        raise ConversionError(f"llama.cpp could not load {path}; reconvert with `advisor models convert --to gguf --force`")
    cp = ll.llama_context_default_params()
    cp.n_ctx = n_ctx
    cp.n_batch = cp.n_ubatch = n_batch
    cp.n_seq_max = n_seq
    cp.kv_unified = True
    n = threads or os.cpu_count() or 1
    cp.n_threads = cp.n_threads_batch = n
    cp.type_k = cp.type_v = ll.GGML_TYPE_F32 if kv_f32 else ll.GGML_TYPE_F16
    cp.no_perf = True
    if flash_attn is not None:  # None: llama.cpp's default (auto)
        cp.flash_attn_type = ll.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn else ll.LLAMA_FLASH_ATTN_TYPE_DISABLED
    ctx = ll.llama_init_from_model(model, cp)
    if not ctx:
        ll.llama_model_free(model)
        raise ConversionError(f"llama.cpp could not create a context of {n_ctx} tokens for {path}")
    return model, ctx


def logits_fn(out_dir: Path, n_ctx: int = 512):
    """A function prompt ids -> logits [T, vocab] through llama.cpp itself (f32 KV cache)."""
    import llama_cpp as ll

    # flash attention off: its CPU kernel rounds K/V to fp16, which would hide converter bugs behind noise
    model, ctx = load(out_dir / FILENAME, n_ctx=n_ctx, n_batch=n_ctx, flash_attn=False)
    n_vocab = int(ll.llama_vocab_n_tokens(ll.llama_model_get_vocab(model)))
    batch = ll.llama_batch_init(n_ctx, 0, 1)

    def fn(ids: list[int]) -> np.ndarray:
        ll.llama_memory_clear(ll.llama_get_memory(ctx), True)
        for i, t in enumerate(ids):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = t, i, 1, 1
            batch.seq_id[i][0] = 0
        batch.n_tokens = len(ids)
        rc = ll.llama_decode(ctx, batch)
        if rc != 0:
            raise ConversionError(f"llama_decode failed with code {rc}")
        return np.array([np.ctypeslib.as_array(ll.llama_get_logits_ith(ctx, i), shape=(n_vocab,))
                         for i in range(len(ids))], dtype=np.float32)

    def close() -> None:
        ll.llama_batch_free(batch)
        ll.llama_free(ctx)
        ll.llama_model_free(model)

    fn.close = close  # type: ignore[attr-defined]
    return fn


def tokenizer_fn(out_dir: Path):
    """(encode, decode, skip_special) through llama.cpp's own vocabulary in the GGUF (specials added and parsed)."""
    import ctypes

    import llama_cpp as ll

    quiet()
    ll.llama_backend_init()
    mp = ll.llama_model_default_params()
    mp.vocab_only = True
    model = ll.llama_model_load_from_file(str(out_dir / FILENAME).encode(), mp)
    if not model:
        raise ConversionError(f"llama.cpp could not load the vocabulary of {out_dir / FILENAME}")
    vocab = ll.llama_model_get_vocab(model)

    def encode(text: str) -> list[int]:
        raw = text.encode("utf-8")
        n_max = len(raw) + 16
        buf = (ll.llama_token * n_max)()
        n = ll.llama_tokenize(vocab, raw, len(raw), buf, n_max, True, True)
        if n < 0:
            raise ConversionError(f"llama.cpp could not tokenize {text!r} (code {n})")
        return list(buf[:n])

    def decode(ids: list[int]) -> str:
        arr = (ll.llama_token * max(1, len(ids)))(*ids)
        size = 16 * len(ids) + 64
        out = ctypes.create_string_buffer(size)
        n = ll.llama_detokenize(vocab, arr, len(ids), out, size, False, True)
        if n < 0:
            raise ConversionError(f"llama.cpp could not detokenize {ids[:8]} (code {n})")
        return out.raw[:n].decode("utf-8", errors="replace")

    encode.close = lambda: ll.llama_model_free(model)  # type: ignore[attr-defined]
    return encode, decode, False
