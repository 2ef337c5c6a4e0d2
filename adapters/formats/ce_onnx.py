"""A cross-encoder (reranker) folder as one ONNX graph (fp32, and int8 by dynamic quantisation), cached and checked
beside the model like `adapters.formats.st_onnx`'s embedding conversion.

The graph is the folder's `...ForSequenceClassification` model as sentence-transformers' `CrossEncoder` loads it
(its module stack must be that one Transformer, with one label), exported by `torch.onnx.export` with the
sigmoid `CrossEncoder.predict` applies to one label inside: inputs are the tokenizer's for a (query, passage)
pair (`input_ids`, `attention_mask`, and `token_type_ids` when the tokenizer makes them), the output `scores`,
one per pair. int8 is `st_onnx.quantize_int8` of the cached fp32 graph (`st_onnx.INT8_RECIPE`, part of the fingerprint).
A conversion goes to `<model>/converted/ce-onnx-<precision>/` with a `manifest.json`; an unchanged source is
not converted again. Every fresh conversion is checked: its scores of fixed (query, passage) pairs against
`CrossEncoder.predict` fp32, the largest absolute difference at most `MAX_SCORE_DIFF[precision]`, else
ConversionError and nothing is cached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.formats import st_onnx
from adapters.formats.check import ConversionError
from adapters.formats.st_onnx import FILENAME, PRECISIONS, StOnnx

# the conversion check, on sigmoid scores in [0, 1]: fp32 must be the same function (float rounding only); int8 only
# close enough that `advisor verify`'s rerank drift is about quantisation, not a broken graph (it reports the rest)
MAX_SCORE_DIFF = {"fp32": 1e-4, "int8": 0.1}
CHECK_QUERIES = ("which animal jumps?", "who created the earth", "numbers and punctuation")


def converted_dir(folder: Path, precision: str) -> Path:
    return Path(folder) / "converted" / f"ce-onnx-{precision}"


def check_pairs() -> list[tuple[str, str]]:
    """Every check query with every check passage (`st_onnx.CHECK_TEXTS`)."""
    return [(q, p) for q in CHECK_QUERIES for p in st_onnx.CHECK_TEXTS]


def ensure(folder: Path, precision: str, force: bool = False) -> StOnnx:
    """The cached, checked ONNX conversion of the cross-encoder `folder` at `precision`; converts when missing or stale."""
    from adapters.formats import fingerprint

    if precision not in PRECISIONS:
        raise ConversionError(f"the ONNX rerank conversion supports precision {', '.join(PRECISIONS)}, not {precision!r}")
    folder = Path(folder)
    fp = _fingerprint(folder, fingerprint(folder) + (st_onnx.INT8_RECIPE if precision == "int8" else ""))

    def build(tmp: Path) -> dict[str, Any]:
        if precision == "fp32":
            meta = _export(folder, tmp / FILENAME)
        else:
            base = ensure(folder, "fp32")
            st_onnx.quantize_int8(base.path / FILENAME, tmp / FILENAME)
            meta = {k: base.manifest[k] for k in ("inputs", "max_seq_length")}
        return {"format": "ce-onnx", "precision": precision, "source_fingerprint": fp, **meta,
                "check": _check(folder, tmp / FILENAME, meta["inputs"], precision)}

    return st_onnx.cached(converted_dir(folder, precision), fp, build, force)


def _fingerprint(folder: Path, weights: str) -> str:
    """The weights' fingerprint and the model's own config files, hashed: a changed label count converts again."""
    import hashlib

    h = hashlib.sha256(weights.encode())
    for f in sorted(folder / n for n in ("config.json", "modules.json", "sentence_bert_config.json")):
        if f.is_file():
            h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()


def _load(folder: Path) -> Any:
    """The folder as sentence-transformers' CrossEncoder; ConversionError when it is not a one-label cross-encoder."""
    from sentence_transformers import CrossEncoder

    try:
        m = CrossEncoder(str(folder), device="cpu")
    except Exception as e:  # noqa: BLE001 (any load failure is one line naming the folder)
        raise ConversionError(f"sentence-transformers could not load {folder} as a CrossEncoder: "
                              f"{type(e).__name__}: {str(e)[:300]}") from None
    stack = [type(x).__name__ for x in m]
    if stack != ["Transformer"] or m.model is None:
        raise ConversionError(f"{folder}: the CrossEncoder's module stack is {', '.join(stack)}; the ONNX rerank "
                              "conversion handles one Transformer (a ...ForSequenceClassification model)")
    if m.num_labels != 1:
        raise ConversionError(f"{folder} has {m.num_labels} labels; a reranker scores with one")
    m.eval()
    return m


def _export(folder: Path, out: Path) -> dict[str, Any]:
    import torch

    m = _load(folder)
    pairs = check_pairs()[:2]
    features = m.tokenizer([q for q, _ in pairs], [p for _, p in pairs], padding=True, return_tensors="pt")
    inputs = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features]
    model = m.model

    class Scores(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            return torch.sigmoid(self.m(**dict(zip(inputs, args))).logits[:, 0])  # [batch]

    axes: dict[str, dict[int, str]] = {k: {0: "batch", 1: "seq"} for k in inputs}
    axes["scores"] = {0: "batch"}
    try:
        with torch.inference_mode():
            torch.onnx.export(Scores(), tuple(features[k] for k in inputs), str(out), input_names=inputs,
                              output_names=["scores"], dynamic_axes=axes, opset_version=17, dynamo=False)
    except Exception as e:  # noqa: BLE001 (any exporter failure is one line naming the model)
        raise ConversionError(f"torch.onnx.export could not export {folder}: {type(e).__name__}: {str(e)[:300]}") from e
    return {"inputs": inputs, "max_seq_length": int(m.max_seq_length), "architecture": type(model).__name__}


def _check(folder: Path, onnx_file: Path, inputs: list[str], precision: str) -> dict[str, Any]:
    """The conversion's scores against CrossEncoder.predict fp32 on the check pairs; ConversionError past the bound."""
    import numpy as np
    import torch

    m = _load(folder)
    pairs = check_pairs()
    ref = np.asarray(m.predict(pairs, batch_size=len(pairs), activation_fn=torch.nn.Sigmoid(),
                               show_progress_bar=False), dtype=np.float64)
    feats = m.tokenizer([q for q, _ in pairs], [p for _, p in pairs], padding=True, return_tensors="np")
    got = np.asarray(st_onnx.session(onnx_file, None).run(None, {k: feats[k].astype(np.int64) for k in inputs})[0],
                     dtype=np.float64)
    diff = float(np.abs(got - ref).max())
    result = {"pairs": len(pairs), "max_abs_score_diff": diff, "bound": MAX_SCORE_DIFF[precision]}
    if not diff <= MAX_SCORE_DIFF[precision]:
        raise ConversionError(f"ce-onnx {precision} of {folder}: scores differ from CrossEncoder.predict fp32 by up "
                              f"to {diff:.6f} on the check pairs, more than {MAX_SCORE_DIFF[precision]}; the "
                              "conversion computes another function, nothing was cached")
    return result
