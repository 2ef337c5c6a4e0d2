"""Convert one HF model folder into each CPU engine's format, cached next to the model and logit-checked.

`convert(model, "gguf"|"onnx"|"openvino", precision)` writes
`<model>/converted/<format>-<precision>/` with the engine's files and a
`manifest.json` (source fingerprint, tool versions, the logit check's
result). A second call with an unchanged source returns at once; a changed
source (or `force=True`) reconverts; `ensure_converted` also says whether
it converted and what the engine cannot do (its limits). A conversion is
written aside and swapped in, and what a killed one left is cleaned up by
the next (`model_cache.staging`). Before writing, the target engine's limits are
checked (`limits.for_format`: a clear error instead of a kernel message
mid-run). Every fresh conversion is checked against the fp32
reference (logits) and its tokenizer against the original on mixed text
(`text_check`); either mismatch raises ConversionError. The conversion
itself is done by each engine family's own tools (see the format modules).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from adapters.formats import limits, text_check, tokenizer_family
from adapters.formats.check import ConversionError, Divergence, check_logits
from adapters.formats.registry import FORMATS, Format
from adapters.formats.registry import format_module as _module
from model_cache import staging

MANIFEST = "manifest.json"
_TOOLS = {"gguf": ("gguf", "llama-cpp-python"), "onnx": ("onnxruntime-genai", "onnxruntime"),
          "openvino": ("openvino", "openvino-tokenizers")}

__all__ = ["FORMATS", "ConversionError", "Converted", "Divergence", "checked_precision", "convert", "ensure_converted",
           "normalize_precision", "precisions", "converted_dir", "read_manifest", "logits_fn"]


def precisions(fmt: str) -> tuple[str, ...]:
    """Precisions a format can be converted to on this CPU build."""
    return _module(fmt).PRECISIONS


def checked_precision(fmt: str, precision: str) -> str:
    """An engine option's precision, as given, if the format supports it; else a ValueError with the valid list
    (so `--opt precision=bogus` and a matrix plan's are refused before anything starts, not at conversion)."""
    try:
        normalize_precision(fmt, precision)
    except ConversionError as e:
        raise ValueError(str(e)) from None
    return precision


def normalize_precision(fmt: str, precision: str) -> str:
    """Map aliases (int8 -> q8_0 for GGUF, ...) and refuse unsupported precisions with the valid list."""
    mod = _module(fmt)
    p = mod.ALIASES.get(precision.lower(), precision.lower())
    if p not in mod.PRECISIONS:
        raise ConversionError(f"{fmt} does not support precision {precision!r} here; choose one of: "
                              f"{', '.join(mod.PRECISIONS)}")
    return p


def converted_dir(model_path: Path, fmt: str, precision: str) -> Path:
    return Path(model_path) / "converted" / f"{fmt}-{normalize_precision(fmt, precision)}"


def fingerprint(model_path: Path) -> str:
    """Hash of the source folder: config/tokenizer contents, weight sizes, and each weight file's head and tail.

    Reading only 1 MiB at each end keeps the cache check instant on large models
    while catching any re-save (sizes, headers and tails change).
    """
    h = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        f = model_path / name
        if f.is_file():
            h.update(name.encode() + f.read_bytes())
    weights = sorted(model_path.glob("*.safetensors"))
    for f in weights:
        size = f.stat().st_size
        h.update(f"{f.name}:{size}".encode())
        with f.open("rb") as fh:
            h.update(fh.read(1 << 20))
            fh.seek(max(0, size - (1 << 20)))
            h.update(fh.read(1 << 20))
    return h.hexdigest()


def read_manifest(out_dir: Path) -> dict[str, Any] | None:
    f = out_dir / MANIFEST
    if not f.is_file():
        return None
    try:
        return json.loads(f.read_text())
    except json.JSONDecodeError:
        return None


def _validate_source(model_path: Path) -> None:
    if not model_path.is_dir():
        from model_cache.paths import missing_model_hint

        raise ConversionError(f"model folder {model_path} does not exist; {missing_model_hint(model_path)}")
    if not (model_path / "config.json").is_file():
        raise ConversionError(f"{model_path} has no config.json; point at a Hugging Face model folder")
    try:
        cfg = json.loads((model_path / "config.json").read_text())
    except json.JSONDecodeError as e:
        raise ConversionError(f"{model_path / 'config.json'} is not valid JSON ({e}); the model folder is corrupt") from e
    from model_cache.config import ModelConfig

    try:  # every converter reads the same LLaMA/Qwen2/Mistral keys: refuse here, not with a KeyError or a traceback
        ModelConfig.from_dict(cfg)
    except (ValueError, TypeError, AttributeError) as e:
        raise ConversionError(f"{model_path / 'config.json'}: {e}") from e
    weights = sorted(model_path.glob("*.safetensors"))
    if not weights:
        raise ConversionError(f"{model_path} has no *.safetensors weights; re-create or re-download the model")
    for f in weights:
        _check_safetensors(f)


def _check_safetensors(f: Path) -> None:
    """Cheap structural check (header JSON and data size) so a truncated file fails before any converter runs."""
    size = f.stat().st_size
    try:
        with f.open("rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            if not 0 < n <= min(size - 8, 100 << 20):
                raise ValueError(f"header length {n} does not fit a {size}-byte file")
            header = json.loads(fh.read(n))
        end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
        if 8 + n + end != size:
            raise ValueError(f"tensors need {8 + n + end} bytes, the file has {size}")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise ConversionError(f"{f} is not a valid safetensors file ({e}); the model is corrupt: "
                              "re-create it (`advisor models create --force`) or re-download it") from e


def _versions(fmt: str) -> dict[str, str]:
    out = {}
    for pkg in _TOOLS[fmt]:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out


def _write(model_path: Path, fmt: str, precision: str, tmp: Path) -> dict[str, Any] | None:
    """Write `fmt` into `tmp`; returns what the writer reports about the tokenizer it wrote (GGUF), if anything."""
    if fmt == "gguf":
        from adapters.formats import gguf as g

        if precision in ("fp32", "fp16"):
            return g.write_gguf(model_path, tmp / g.FILENAME, precision)
        # quantize from the (cached, checked) fp32 file with llama.cpp's quantizer
        src = convert(model_path, "gguf", "fp32")
        g.quantize(src / g.FILENAME, tmp / g.FILENAME, precision)
        return (read_manifest(src) or {}).get("tokenizer")
    elif fmt == "onnx":
        from adapters.formats import onnx as o

        o.write_onnx(model_path, tmp, precision)
    else:
        from adapters.formats import openvino as v

        v.write_openvino(model_path, tmp, precision)
    return None


def _check_text(model_path: Path, fmt: str, precision: str, out_dir: Path) -> text_check.TextCheck | None:
    """The converted tokenizer against the original on mixed text; ConversionError naming the family if they differ."""
    if not (model_path / "tokenizer.json").is_file():
        return None  # nothing to compare against: the model runs on token ids only
    result = text_check.check(model_path, fmt, out_dir)
    if not result.ok:
        family = tokenizer_family.detect(model_path).describe()
        raise ConversionError(
            f"{fmt} {precision}: the converted {family} tokenizer tokenizes text differently from the original "
            f"({result.ids_agree}/{result.texts} texts give the same ids, {result.decode_agree}/{result.texts} decode "
            f"the same); first: {result.first_mismatch}. A benchmark sending text to this engine would measure "
            "other prompts; use a format whose tokenizer agrees (`advisor verify` shows each), or send token ids")
    return result


def logits_fn(fmt: str, out_dir: Path) -> Any:
    """prompt ids -> logits [T, vocab] computed by the engine that runs `fmt` (for checks and `advisor verify`)."""
    return _module(fmt).logits_fn(out_dir)


@dataclass(frozen=True)
class Converted:
    path: Path  # the conversion's folder
    fresh: bool  # this call converted (False: the cached conversion was up to date)
    limits: limits.EngineLimits  # what the engine running it cannot do (a capped context, with its reason)


def convert(model_path: Path, to: Format, precision: str = "fp32", *, force: bool = False,
            check: bool = True) -> Path:
    """Convert `model_path` to `to` at `precision`; returns the output folder (cached, idempotent)."""
    return ensure_converted(model_path, to, precision, force=force, check=check).path


def ensure_converted(model_path: Path, to: Format, precision: str = "fp32", *, force: bool = False,
                     check: bool = True) -> Converted:
    """`convert`, also saying whether this call converted and the engine's limits."""
    model_path = Path(model_path).resolve()
    precision = normalize_precision(to, precision)
    _validate_source(model_path)
    cfg = json.loads((model_path / "config.json").read_text())
    engine_limits = limits.for_format(to, cfg, precision)  # refuses what the engine cannot run, even when cached
    out = converted_dir(model_path, to, precision)
    staging.sweep(out.parent, lambda folder: read_manifest(folder) is not None)  # what killed conversions left
    fp = fingerprint(model_path)
    man = read_manifest(out)
    if not force and man is not None and man.get("source_fingerprint") == fp and (check is False or man.get("check")):
        return Converted(out, False, engine_limits)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tmp = staging.stage(out)
    try:
        tokenizer = _write(model_path, to, precision, tmp)
        div = text = None
        if check:
            fn = logits_fn(to, tmp)
            try:
                div = check_logits(model_path, to, precision, fn, int(cfg["vocab_size"]))
            finally:
                getattr(fn, "close", lambda: None)()
            text = _check_text(model_path, to, precision, tmp)
        manifest = {"source": str(model_path), "source_fingerprint": fp, "format": to, "precision": precision,
                    "tools": _versions(to), "convert_s": round(time.perf_counter() - t0, 3),
                    "check": div.to_dict() if div else None, "text_check": text.to_dict() if text else None,
                    "tokenizer": tokenizer, "max_context": engine_limits.max_context,
                    "limits": list(engine_limits.notes)}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))  # last: a folder with a manifest is complete
        staging.swap_in(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return Converted(out, True, engine_limits)
