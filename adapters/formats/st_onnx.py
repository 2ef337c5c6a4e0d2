"""A sentence-transformers embedding folder as one ONNX graph (fp32, and int8 by dynamic quantisation), cached and
checked beside the model like the generation conversions.

The graph is the model's whole module stack as its `modules.json` lists it (Transformer, then Pooling, then
Normalize when present), exported by `torch.onnx.export` from the loaded `SentenceTransformer`: inputs are the
tokenizer's (`input_ids`, `attention_mask`, and `token_type_ids` when the tokenizer makes them), the output is
`sentence_embedding`, so pooling and normalisation run inside ONNX Runtime exactly as sentence-transformers
configures them. int8 is `onnxruntime.quantization.quantize_dynamic` of the cached fp32 graph (`INT8_RECIPE`):
int8 weights per output channel, activations quantised per batch at run time, and two kinds of MatMul left in
fp32: those with no constant weight (attention's Q.K and P.V, `MatMulConstBOnly`) and those fed by a GELU (each
block's feed-forward down-projection, whose input has the widest range): those two kinds carry most of the
drift int8 adds, so keeping them in fp32 holds the worst corpus chunk at the cosine the target asks for
(figures: benchmarks/RESULTS.md, `embed_engines.py`; the recipes tried: benchmarks/history/embed.md). A
conversion goes to `<model>/converted/st-onnx-<precision>/`
with a `manifest.json` (source fingerprint, tool versions, the check's result); an unchanged source is not
converted again. Every fresh conversion is checked: its vectors against the sentence-transformers fp32 ones
on fixed texts, cosine at least `MIN_COSINE[precision]`, else ConversionError and nothing is cached.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from adapters.formats.check import ConversionError
from model_cache import staging

FILENAME = "model.onnx"
PRECISIONS = ("fp32", "int8")
# the conversion check: fp32 must be the same function (float rounding only); int8 must be close enough that the
# quality figures (`advisor verify`) are about quantisation, not a broken graph
MIN_COSINE = {"fp32": 0.9999, "int8": 0.95}
# what the int8 graph is made with; part of its cache key, so a changed recipe converts again
INT8_RECIPE = "dynamic int8, weights per channel, MatMul with constant weights only, GELU-fed MatMul in fp32"
SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")
CHECK_TEXTS = ("The quick brown fox jumps over the lazy dog.", "In the beginning God created the heaven and the earth.",
               "a short query", "Numbers 12, 345 and 6.78 with punctuation; mixed CASE words!",
               "And the earth was without form, and void; and darkness was upon the face of the deep.")


@dataclass(frozen=True)
class StOnnx:
    path: Path  # the conversion's folder (model.onnx, manifest.json)
    fresh: bool  # this call converted
    manifest: dict[str, Any]
    convert_s: float | None  # seconds spent converting; None: cached


def st_modules(folder: Path) -> list[str]:
    """The module class names in `modules.json` (e.g. Transformer, Pooling, Normalize); ConversionError if none."""
    f = folder / "modules.json"
    if not f.is_file():
        raise ConversionError(f"{folder} has no modules.json: not a sentence-transformers folder")
    try:
        return [str(m["type"]).rsplit(".", 1)[-1] for m in json.loads(f.read_text())]
    except (ValueError, KeyError, TypeError) as e:
        raise ConversionError(f"{f} is not a valid modules.json ({e})") from None


def converted_dir(folder: Path, precision: str) -> Path:
    return Path(folder) / "converted" / f"st-onnx-{precision}"


def ensure(folder: Path, precision: str, force: bool = False) -> StOnnx:
    """The cached, checked ONNX conversion of `folder` at `precision`; converts (and checks) when missing or stale."""
    from adapters.formats import fingerprint

    if precision not in PRECISIONS:
        raise ConversionError(f"the ONNX embedding conversion supports precision {', '.join(PRECISIONS)}, "
                              f"not {precision!r}")
    folder = Path(folder)
    unsupported = [m for m in st_modules(folder) if m not in SUPPORTED_MODULES]
    if unsupported:
        raise ConversionError(f"{folder}: modules.json has {', '.join(unsupported)}; the ONNX embedding conversion "
                              f"handles {', '.join(SUPPORTED_MODULES)}")
    fp = _fingerprint(folder, fingerprint(folder) + (INT8_RECIPE if precision == "int8" else ""))

    def build(tmp: Path) -> dict[str, Any]:
        if precision == "fp32":
            meta = _export(folder, tmp / FILENAME)
        else:
            base = ensure(folder, "fp32")
            quantize_int8(base.path / FILENAME, tmp / FILENAME)
            meta = {k: base.manifest[k] for k in ("inputs", "max_seq_length", "dim")}
        return {"format": "st-onnx", "precision": precision, "source_fingerprint": fp, **meta,
                "check": _check(folder, tmp / FILENAME, meta["inputs"], precision)}

    return cached(converted_dir(folder, precision), fp, build, force)


def cached(target: Path, fp: str, build: Callable[[Path], dict[str, Any]], force: bool = False) -> StOnnx:
    """The conversion in `target` when its manifest's `source_fingerprint` is `fp` and its graph is there; else
    `build(staging folder)` (writes the graph, returns the manifest; raises ConversionError when its check fails),
    then the tool versions and the time are added and the folder swapped in whole. A failed build leaves nothing."""
    from adapters.formats import read_manifest

    old = read_manifest(target)
    if not force and old is not None and old.get("source_fingerprint") == fp and (target / FILENAME).is_file():
        return StOnnx(target, False, old, None)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging.sweep(target.parent, lambda p: (p / "manifest.json").is_file())
    t0 = time.perf_counter()
    tmp = staging.stage(target)
    try:
        manifest = {**build(tmp), "tools": tool_versions(), "converted_at_unix": round(time.time(), 3)}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
        staging.swap_in(tmp, target)
    except BaseException:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return StOnnx(target, True, manifest, round(time.perf_counter() - t0, 4))


def _fingerprint(folder: Path, weights: str) -> str:
    """The weights' fingerprint and the module stack's own files (modules.json, each module's config), hashed:
    a changed pooling mode or max_seq_length converts again."""
    import hashlib

    h = hashlib.sha256(weights.encode())
    for f in sorted([folder / "modules.json", folder / "sentence_bert_config.json",
                     *(p for p in folder.glob("*_*/config.json"))]):
        if f.is_file():
            h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()


def _export(folder: Path, out: Path) -> dict[str, Any]:
    import torch
    from sentence_transformers import SentenceTransformer

    m = SentenceTransformer(str(folder), device="cpu")
    m.eval()
    features = m.tokenize(list(CHECK_TEXTS[:2]))
    inputs = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features]

    class Stack(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = m

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            return self.m(dict(zip(inputs, args)))["sentence_embedding"]

    axes = {k: {0: "batch", 1: "seq"} for k in inputs}
    axes["sentence_embedding"] = {0: "batch"}
    try:
        with torch.inference_mode():
            torch.onnx.export(Stack(), tuple(features[k] for k in inputs), str(out), input_names=inputs,
                              output_names=["sentence_embedding"], dynamic_axes=axes, opset_version=17, dynamo=False)
    except Exception as e:  # noqa: BLE001 (any exporter failure is one line naming the model)
        raise ConversionError(f"torch.onnx.export could not export {folder}: {type(e).__name__}: {str(e)[:300]}") from e
    return {"inputs": inputs, "max_seq_length": int(m.max_seq_length),
            "dim": int(getattr(m, "get_embedding_dimension", m.get_sentence_embedding_dimension)() or 0), "modules": st_modules(folder)}


def quantize_int8(src: Path, out: Path) -> None:
    """`INT8_RECIPE` applied to the fp32 graph at `src`."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    try:
        keep_fp32 = gelu_fed_matmuls(onnx.load(str(src)).graph)
        quantize_dynamic(str(src), str(out), weight_type=QuantType.QInt8, per_channel=True,
                         nodes_to_exclude=keep_fp32, extra_options={"MatMulConstBOnly": True})
    except Exception as e:  # noqa: BLE001
        raise ConversionError(f"onnxruntime could not quantise {src} to int8: {type(e).__name__}: {str(e)[:300]}") from e


def gelu_fed_matmuls(graph: Any, depth: int = 4) -> list[str]:
    """Names of the MatMul nodes whose input comes from a GELU: an `Erf` (exact GELU, as torch exports it) or a
    `Gelu`/`FastGelu` node at most `depth` nodes above the MatMul's first input."""
    producer = {o: n for n in graph.node for o in n.output}

    def from_gelu(name: str, left: int) -> bool:
        n = producer.get(name)
        if n is None or left == 0:
            return False
        if n.op_type in ("Erf", "Gelu", "FastGelu"):
            return True
        return n.op_type in ("Mul", "Add", "Div") and any(from_gelu(i, left - 1) for i in n.input)

    return [n.name for n in graph.node if n.op_type == "MatMul" and n.input and from_gelu(n.input[0], depth)]


def session(path: Path, threads: int | None) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def _check(folder: Path, onnx_file: Path, inputs: list[str], precision: str) -> dict[str, Any]:
    """The conversion's vectors against sentence-transformers fp32 on CHECK_TEXTS; ConversionError below the floor."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    m = SentenceTransformer(str(folder), device="cpu")
    ref = np.asarray(m.encode(list(CHECK_TEXTS), batch_size=len(CHECK_TEXTS)), dtype=np.float64)
    feats = m.tokenize(list(CHECK_TEXTS))
    got = session(onnx_file, None).run(None, {k: feats[k].numpy().astype(np.int64) for k in inputs})[0]
    cos = _cosines(np.asarray(got, dtype=np.float64), ref)
    result = {"texts": len(CHECK_TEXTS), "min_cosine": float(cos.min()), "mean_cosine": float(cos.mean()),
              "floor": MIN_COSINE[precision]}
    if not cos.min() >= MIN_COSINE[precision]:
        raise ConversionError(f"st-onnx {precision} of {folder}: cosine to sentence-transformers fp32 is "
                              f"{cos.min():.6f} on the check texts, below {MIN_COSINE[precision]}; the conversion "
                              "computes another function, nothing was cached")
    return result


def _cosines(a: Any, b: Any) -> Any:
    import numpy as np

    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    return (a * b).sum(axis=1) / np.maximum(na * nb, 1e-30)


def tool_versions() -> dict[str, str]:
    out = {}
    for pkg in ("torch", "sentence-transformers", "onnx", "onnxruntime"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out
