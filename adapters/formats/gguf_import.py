"""`advisor models import FILE.gguf`: a Hugging Face folder (safetensors, config, tokenizer) from a GGUF file.

Read with llama.cpp's own `gguf` package (`GGUFReader`); every tensor is dequantized by
`gguf.quants.dequantize` (numpy, the same block formats llama.cpp defines) to fp32 and cast to the chosen
dtype. Written by hand, as transformers' GGUF loading does it for LLaMA-family models (its
`LlamaTensorProcessor`) but without building a transformers model: the tensor-name map GGUF -> HF, and
the inverse of llama.cpp's rotary permutation of the Q and K rows (`_unpermute`, undoing
`gguf._permute`; Qwen2 files are not permuted). The config comes from the `<arch>.*` metadata, the
tokenizer from the `tokenizer.ggml.*` metadata (`gguf_tokenizer`). Anything the folder could not
reproduce is refused by name, before anything is written: another architecture, RoPE scaling, a tensor
with no HF name, a truncated or non-GGUF file, a header whose counts cannot fit the file (`gguf_header`,
walked before the package reads it).

Provenance (source file, its sha256, the file's quantization, tensor types, the check) goes to
`gguf_source.json` in the folder and a summary to config.json's `advisor` block. The folder is written
aside and swapped in (`model_cache.staging`): a failed import leaves nothing. `gguf_import_check` proves
the result against llama.cpp on the original file.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from importlib import metadata as pkg_metadata
from pathlib import Path
from typing import Any

import numpy as np

from adapters.formats import gguf_header
from adapters.formats.check import ConversionError

ARCHS = {"llama": ("llama", "LlamaForCausalLM"), "qwen2": ("qwen2", "Qwen2ForCausalLM")}  # GGUF arch -> HF
DTYPES = ("float32", "bfloat16", "float16")
SOURCE_FILE = "gguf_source.json"
_LAYER = {"attn_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
          "attn_q.weight": "self_attn.q_proj.weight", "attn_k.weight": "self_attn.k_proj.weight",
          "attn_v.weight": "self_attn.v_proj.weight", "attn_output.weight": "self_attn.o_proj.weight",
          "attn_q.bias": "self_attn.q_proj.bias", "attn_k.bias": "self_attn.k_proj.bias",
          "attn_v.bias": "self_attn.v_proj.bias",
          "ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight",
          "ffn_down.weight": "mlp.down_proj.weight"}
_TOP = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
        "output.weight": "lm_head.weight"}


class GgufImportError(ConversionError):
    """The file cannot become a model folder advisor can run (one line, nothing written)."""


@dataclass(frozen=True)
class GgufFile:
    path: Path
    reader: Any  # gguf.GGUFReader
    fields: dict[str, Any]
    arch: str
    quantization: str  # general.file_type as llama.cpp names it (MOSTLY_Q4_1), else the commonest tensor type
    tensor_types: dict[str, int]


def _gguf() -> Any:
    try:
        import gguf
    except ImportError as e:
        raise GgufImportError("importing a GGUF needs the gguf package: pip install -e .") from e
    return gguf


def open_gguf(path: Path) -> GgufFile:
    """Open and validate `path`: a GGUF of a supported architecture whose tensors are all in the file."""
    gguf = _gguf()
    path = Path(path)
    if not path.is_file():
        raise GgufImportError(f"no such file: {path}")
    size = path.stat().st_size
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise GgufImportError(f"{path} is not a GGUF file (it starts with {magic!r}, a GGUF with b'GGUF')")
    try:
        gguf_header.check_header(path)  # the package believes every count in the header; refuse one that cannot fit
    except gguf_header.HeaderError as e:
        raise GgufImportError(str(e)) from None
    try:
        reader = gguf.GGUFReader(str(path))
    except (ValueError, IndexError, KeyError, OSError, OverflowError, UnicodeDecodeError) as e:
        raise GgufImportError(f"{path} is truncated or corrupt: its header cannot be read ({type(e).__name__}: "
                              f"{str(e)[:120]})") from e
    end = max((int(t.data_offset) + int(t.n_bytes) for t in reader.tensors), default=0)
    if end > size:
        raise GgufImportError(f"{path} is truncated: its tensors need {end} bytes, the file has {size}")
    fields = {}
    for name, field in reader.fields.items():
        try:
            fields[name] = field.contents()
        except (ValueError, IndexError, UnicodeDecodeError) as e:
            raise GgufImportError(f"{path}: metadata field {name} cannot be read ({e}); the file is corrupt") from e
    arch = str(fields.get("general.architecture", ""))
    if arch not in ARCHS:
        raise GgufImportError(f"{path.name} is a '{arch or 'unnamed'}' model; advisor runs the GGUF architectures "
                              f"{', '.join(ARCHS)} (LLaMA, Mistral, SmolLM, TinyLlama, Qwen2 and others of their shape)")
    types = Counter(t.tensor_type.name for t in reader.tensors)
    ft = fields.get("general.file_type")
    try:
        quant = gguf.LlamaFileType(int(ft)).name if ft is not None else types.most_common(1)[0][0]
    except ValueError:
        quant = f"file_type {ft}"
    return GgufFile(path, reader, fields, arch, quant, dict(types))


def hf_config(g: GgufFile, dtype: str, vocab_size: int) -> dict[str, Any]:
    """config.json from the `<arch>.*` metadata (transformers-5 and older keys, as `model_cache.create` writes)."""
    f, a = g.fields, g.arch

    def need(key: str) -> Any:
        if f"{a}.{key}" not in f:
            raise GgufImportError(f"{g.path.name} lacks the metadata {a}.{key}; the file is incomplete")
        return f[f"{a}.{key}"]

    scaling = f.get(f"{a}.rope.scaling.type")
    if scaling not in (None, "none"):
        raise GgufImportError(f"{g.path.name} uses RoPE scaling '{scaling}'; import handles unscaled RoPE only")
    hidden, heads = int(need("embedding_length")), int(need("attention.head_count"))
    kv = int(f.get(f"{a}.attention.head_count_kv", heads))
    head_dim = int(f.get(f"{a}.attention.key_length", hidden // heads))
    rope_dim = int(f.get(f"{a}.rope.dimension_count", head_dim))
    if rope_dim != head_dim:
        raise GgufImportError(f"{g.path.name} rotates {rope_dim} of {head_dim} head dims; import handles full RoPE")
    theta = float(f.get(f"{a}.rope.freq_base", 10000.0))
    family, arch_cls = ARCHS[a]
    tied = not any(t.name == "output.weight" for t in g.reader.tensors)
    tok = lambda key: f.get(f"tokenizer.ggml.{key}_token_id")  # noqa: E731
    cfg: dict[str, Any] = {
        "architectures": [arch_cls], "model_type": family, "hidden_size": hidden,
        "intermediate_size": int(need("feed_forward_length")), "num_attention_heads": heads,
        "num_hidden_layers": int(need("block_count")), "num_key_value_heads": kv, "head_dim": head_dim,
        "vocab_size": vocab_size, "max_position_embeddings": int(f.get(f"{a}.context_length", 2048)),
        "rms_norm_eps": float(need("attention.layer_norm_rms_epsilon")), "rope_theta": theta, "rope_scaling": None,
        "rope_parameters": {"rope_type": "default", "rope_theta": theta}, "tie_word_embeddings": tied,
        "attention_dropout": 0.0, "hidden_act": "silu", "use_cache": True,
        "bos_token_id": tok("bos"), "eos_token_id": tok("eos"), "torch_dtype": dtype, "dtype": dtype,
    }
    if tok("padding") is not None:
        cfg["pad_token_id"] = tok("padding")
    if family == "llama":
        cfg.update({"attention_bias": any(t.name.endswith("attn_q.bias") for t in g.reader.tensors),
                    "mlp_bias": False, "pretraining_tp": 1})
    else:
        cfg.update({"use_sliding_window": False, "sliding_window": None, "max_window_layers": cfg["num_hidden_layers"]})
    return cfg


def _unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo llama.cpp's rotary permutation (convert_hf_to_gguf's `permute`): GGUF interleaves, HF splits halves."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_name(gguf_name: str) -> str | None:
    if gguf_name in _TOP:
        return _TOP[gguf_name]
    m = re.fullmatch(r"blk\.(\d+)\.(.+)", gguf_name)
    if m and m.group(2) in _LAYER:
        return f"model.layers.{m.group(1)}.{_LAYER[m.group(2)]}"
    return None


def weights(g: GgufFile, cfg: dict[str, Any], dtype: str) -> dict[str, Any]:
    """Every tensor dequantized to fp32 by gguf.quants, un-permuted where llama.cpp permuted it, cast to `dtype`."""
    import torch
    from gguf import quants

    unknown = [t.name for t in g.reader.tensors if hf_name(t.name) is None]
    if unknown:
        raise GgufImportError(f"{g.path.name} has tensors with no Hugging Face {cfg['model_type']} name "
                              f"({', '.join(unknown[:4])}{'...' if len(unknown) > 4 else ''}); import cannot place them")
    out: dict[str, Any] = {}
    permute = g.arch == "llama"
    for t in g.reader.tensors:
        try:
            arr = np.asarray(quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        except NotImplementedError as e:
            raise GgufImportError(f"{g.path.name}: tensor {t.name} is {t.tensor_type.name}, which the gguf package "
                                  "cannot dequantize") from e
        arr = arr.reshape(tuple(int(d) for d in reversed(t.shape)))  # GGUF lists dims innermost first
        if permute and ".attn_q." in t.name:
            arr = _unpermute(arr, cfg["num_attention_heads"])
        elif permute and ".attn_k." in t.name:
            arr = _unpermute(arr, cfg["num_key_value_heads"])
        out[hf_name(t.name)] = torch.from_numpy(np.require(arr, requirements=["C", "W"])).to(getattr(torch, dtype))  # type: ignore[index]
    return out


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def default_name(path: Path) -> str:
    """A cache name from the file name: 'SmolLM2-135M-Instruct.Q4_1.gguf' -> 'smollm2-135m-instruct-q4_1'."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(path).stem).replace(".", "-").strip("-._").lower()
    return stem or "imported"


@dataclass(frozen=True)
class Imported:
    path: Path
    source: dict[str, Any]  # what gguf_source.json holds


def write_folder(g: GgufFile, folder: Path, dtype: str) -> dict[str, Any]:
    """Write config, weights, tokenizer and provenance of `g` into the (empty, staged) `folder`."""
    from safetensors.torch import save_file

    from adapters.formats import gguf_tokenizer

    if dtype not in DTYPES:
        raise GgufImportError(f"dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    tok = gguf_tokenizer.build(g.fields)
    emb = next((t for t in g.reader.tensors if t.name == "token_embd.weight"), None)
    if emb is None:
        raise GgufImportError(f"{g.path.name} has no token_embd.weight; the file is incomplete")
    vocab_size = int(emb.shape[-1])
    if tok.tokenizer.get_vocab_size() > vocab_size:
        raise GgufImportError(f"{g.path.name}: {tok.tokenizer.get_vocab_size()} tokens, {vocab_size} embedding rows")
    cfg = hf_config(g, dtype, vocab_size)
    w = weights(g, cfg, dtype)
    n_params = sum(int(t.numel()) for t in w.values())
    source = {"file": g.path.name, "path": str(g.path.resolve()), "sha256": sha256(g.path),
              "size_bytes": g.path.stat().st_size, "name": g.fields.get("general.name"),
              "license": g.fields.get("general.license"), "architecture": g.arch, "quantization": g.quantization,
              "tensor_types": g.tensor_types, "dtype": dtype, "tokenizer_pre": tok.pre,
              "gguf_package": _version("gguf"),
              "how": "tensors dequantized by gguf.quants.dequantize to fp32, cast to dtype; Q/K rows un-permuted"}
    cfg["advisor"] = {"source": "gguf", "n_params": n_params,
                      "gguf": {k: source[k] for k in ("file", "sha256", "quantization")}}
    save_file(w, str(folder / "model.safetensors"), metadata={"format": "pt"})
    tok.tokenizer.save(str(folder / "tokenizer.json"))
    gen = {k: cfg[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if cfg.get(k) is not None}
    files = {"config.json": cfg, "generation_config.json": {**gen, "do_sample": False},
             "tokenizer_config.json": tok.config(cfg["max_position_embeddings"]), SOURCE_FILE: source}
    for name, obj in files.items():
        (folder / name).write_text(json.dumps(obj, indent=2) + "\n")
    return source


def _version(pkg: str) -> str | None:
    try:
        return pkg_metadata.version(pkg)
    except pkg_metadata.PackageNotFoundError:
        return None


def import_gguf(file: Path, name: str | None = None, *, root: Path | None = None, dtype: str = "float32",
                force: bool = False, check: bool = True, log: Any = None) -> Imported:
    """Import `file` as model `name` under `root` (default: the model cache); checks it against llama.cpp.

    `log(line)` receives progress lines. Every refusal raises GgufImportError (FileExistsError for an
    existing model without `force`) before the target is touched.
    """
    from model_cache import staging
    from model_cache.paths import check_model_name, models_root

    name = name or default_name(Path(file))
    try:
        check_model_name(name)
    except ValueError as e:
        raise GgufImportError(str(e)) from None
    if dtype not in DTYPES:
        raise GgufImportError(f"dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    target = (Path(root) if root else models_root()) / name
    if target.exists() and not force:
        raise FileExistsError(f"model '{name}' already exists at {target}; pass --force to replace it")
    g = open_gguf(Path(file))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = staging.stage(target)
    try:
        say = log or (lambda line: None)
        say(f"importing {g.path.name} ({g.arch}, {g.quantization}) as {dtype}")
        source = write_folder(g, tmp, dtype)
        if check:
            from adapters.formats import gguf_import_check

            result = gguf_import_check.check(tmp, g.path, log=say)
            source["check"] = result
            (tmp / SOURCE_FILE).write_text(json.dumps(source, indent=2) + "\n")
        staging.swap_in(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return Imported(target, source)
