"""The matrix tokenizer family x model family x format (engines group).

Must pass: byte-level BPE and SentencePiece-style BPE x LLaMA, Qwen2, Mistral x
GGUF, ONNX and OpenVINO at fp32: the conversion succeeds (its logit and text
checks inside), `advisor verify` agrees token for token with own_engine and
the format's own tokenizer agrees with the original on mixed text. HF itself
(own_engine against transformers' classes) is tests/own_engine/model/test_families.py.
Mistral beyond its 64-token window: where the engine has no sliding windows,
the context is capped at the window and says so. Unigram and WordLevel
either pass the same checks or are refused naming the family and the format.
Models and conversions are shared per module (each is converted once).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from adapters.formats import ConversionError, convert, read_manifest
from advisor.quality.verify import Variant, verify

pytestmark = pytest.mark.engines

# (model name, preset, tokenizer kind or None for the preset's own)
MODELS = {
    "llama-bytebpe": ("tiny-llama3", None), "llama-spm": ("tiny-llama2", None),
    "qwen2-bytebpe": ("tiny-qwen2", None), "qwen2-spm": ("tiny-qwen2", "spm-bpe"),
    "mistral-spm": ("tiny-mistral", None), "mistral-bytebpe": ("tiny-mistral", "bpe-llama3"),
}
FORMATS = {"gguf": ("llama_cpp", "llama_cpp"), "onnx": ("onnxruntime", "onnxruntime_genai"),
           "openvino": ("openvino", "openvino_genai")}
REFUSABLE = {"unigram": "Unigram", "wordlevel": "WordLevel"}
# onnxruntime-genai picks its tokenizer by model type: a Qwen2 model with a SentencePiece tokenizer (no real
# checkpoint ships one) makes its tokenizer fail ("map::at"); the conversion is refused, naming both
REFUSED = {("qwen2-spm", "onnx"): "SentencePiece-style BPE"}


@functools.cache
def _root() -> Path:
    import atexit
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="advisor-families-"))
    atexit.register(shutil.rmtree, root, True)
    return root


@functools.cache
def model(name: str) -> Path:
    from model_cache.create import create_model

    if name in REFUSABLE:
        return create_model(name, "tiny", root=_root(), tokenizer=name)
    preset, tok = MODELS[name]
    return create_model(name, preset, root=_root(), tokenizer=tok)


def _need(fmt: str) -> None:
    import adapters

    pytest.importorskip(FORMATS[fmt][1])
    why = adapters.why_unavailable(FORMATS[fmt][0])
    if why:
        pytest.skip(why)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", MODELS)
def test_converts_and_agrees_with_own_engine_and_the_original_tokenizer(name, fmt) -> None:
    _need(fmt)
    path = model(name)
    if (name, fmt) in REFUSED:
        with pytest.raises(ConversionError, match=f"{REFUSED[name, fmt]}.*qwen2 model"):
            convert(path, fmt, "fp32")
        return
    out = convert(path, fmt, "fp32")
    man = read_manifest(out)
    assert man["check"]["argmax_agreement"] == 1.0 and man["check"]["rel_max_abs_diff"] < 1e-3
    assert man["text_check"]["ok"] and man["text_check"]["texts"] == 10, man["text_check"]
    own = (Variant("own", "hf-safetensors", "fp32", strict=True),) if fmt == "gguf" else ()  # once per model
    report = verify(path, n_tokens=12, n_prompts=1, variants=(*own, Variant(FORMATS[fmt][0], fmt, "fp32", strict=True)))
    for r in report.results:
        assert r.status == "agree" and r.token_agreement == 1.0 and r.text_agreement == 1.0, r
    assert report.ok


@pytest.mark.parametrize("fmt", FORMATS)
def test_mistral_beyond_its_window_is_computed_or_capped_and_said(fmt) -> None:
    import numpy as np

    import adapters
    from adapters.formats import limits, logits_fn, oracle

    _need(fmt)
    path = model("mistral-spm")
    out = convert(path, fmt, "fp32")
    man = read_manifest(out)
    ids = [(i * 37) % 1900 + 100 for i in range(100)]  # 100 tokens > the 64-token window
    if man["max_context"] == 64:  # this engine has no sliding windows: capped, and the manifest says why
        assert "sliding-window" in man["limits"][0]
        ad = adapters.create(FORMATS[fmt][0], str(path))
        try:
            info = ad.start()
            assert info.max_model_len == 64
        finally:
            ad.close()
        return
    assert limits.for_format(fmt, json.loads((path / "config.json").read_text()), "fp32").max_context == 4096
    fn = logits_fn(fmt, out)
    try:
        got = np.asarray(fn(ids))
    finally:
        getattr(fn, "close", lambda: None)()
    ref = oracle.logits(path, ids)
    assert np.abs(got - ref).max() < 2e-3 * max(1.0, float(np.abs(ref).max()))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", REFUSABLE)
def test_unigram_and_wordlevel_convert_faithfully_or_are_refused_by_name(kind, fmt) -> None:
    _need(fmt)
    path = model(kind)
    try:
        out = convert(path, fmt, "fp32")
    except ConversionError as e:
        assert REFUSABLE[kind] in str(e) and (fmt in str(e).lower() or "GGUF" in str(e)), e
        return
    assert read_manifest(out)["text_check"]["ok"]
