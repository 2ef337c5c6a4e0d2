"""HF folder -> ONNX with KV-cache inputs/outputs, by onnxruntime-genai's own model builder.

Runs `python -m onnxruntime_genai.models.builder -i HF -o OUT -p P -e cpu` in
a subprocess (its CLI is the maintained interface), which writes model.onnx,
its weights, genai_config.json and the tokenizer. The check runs the exported
graph with plain onnxruntime (all positions' logits in one call). On CPU the
builder offers fp32, int8 and int4; fp16 is a CUDA-only export there.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from adapters.formats.check import ConversionError

PRECISIONS = ("fp32", "int8", "int4")
ALIASES = {"f32": "fp32", "q8_0": "int8", "q4_0": "int4"}
FILENAME = "model.onnx"


def write_onnx(model_path: Path, out_dir: Path, precision: str, timeout_s: float = 1800) -> None:
    """Export with the onnxruntime-genai builder; raises ConversionError with its output on failure."""
    if precision == "fp16":
        raise ConversionError("onnxruntime-genai exports fp16 only for GPU providers; use fp32, int8 or int4 on CPU")
    assert precision in PRECISIONS, precision
    try:
        import onnxruntime_genai  # noqa: F401
    except ImportError as e:
        raise ConversionError("ONNX conversion needs onnxruntime-genai: pip install -e '.[onnx]'") from e
    with tempfile.TemporaryDirectory(prefix="ortgenai-cache-") as cache:
        cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(model_path), "-o", str(out_dir),
               "-p", precision, "-e", "cpu", "-c", cache]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0 or not (out_dir / FILENAME).is_file():
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise ConversionError(f"onnxruntime-genai builder failed for {model_path} ({precision}):\n{tail}")


def logits_fn(out_dir: Path):
    """A function prompt ids -> logits [T, vocab], running the exported graph with onnxruntime."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise ConversionError("checking an ONNX model needs onnxruntime: pip install -e '.[onnx]'") from e
    cfg = json.loads((out_dir / "genai_config.json").read_text())["model"]["decoder"]
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(out_dir / cfg.get("filename", FILENAME)), opts, providers=["CPUExecutionProvider"])
    past = [i.name for i in sess.get_inputs() if i.name.startswith("past_key_values")]
    kv_shape = (1, cfg["num_key_value_heads"], 0, cfg["head_size"])

    def fn(ids: list[int]) -> np.ndarray:
        x = np.array([list(ids)], dtype=np.int64)
        feed = {"input_ids": x, "attention_mask": np.ones_like(x)}
        feed.update({name: np.zeros(kv_shape, np.float32) for name in past})
        names = {i.name for i in sess.get_inputs()}
        if "position_ids" in names:
            feed["position_ids"] = np.arange(len(ids), dtype=np.int64)[None]
        return sess.run(["logits"], feed)[0][0].astype(np.float32)

    return fn


def tokenizer_fn(out_dir: Path):
    """(encode, decode, skip_special) through onnxruntime-genai's own tokenizer of the exported folder.

    onnxruntime-genai encodes without the tokenizer's BOS/EOS template unless told (`add_special_tokens`, set
    here as the original tokenizer adds them) and always decodes without special tokens (compared so).
    """
    try:
        import onnxruntime_genai as og
    except ImportError as e:
        raise ConversionError("checking an ONNX model's tokenizer needs onnxruntime-genai: pip install -e '.[onnx]'") from e
    try:
        tok = og.Tokenizer(og.Model(str(out_dir)))
        tok.update_options(add_special_tokens="true")
    except Exception as e:  # onnxruntime-genai raises its own error types for a tokenizer it cannot load
        from adapters.formats.tokenizer_family import detect

        raise ConversionError(f"onnxruntime-genai cannot load this {detect(out_dir).describe()} tokenizer "
                              f"({str(e)[:200]}); use a format whose tokenizer agrees (`advisor verify` shows "
                              "each), or send token ids") from e

    def encode(text: str) -> list[int]:
        return [int(i) for i in tok.encode(text)]

    def decode(ids: list[int]) -> str:
        return str(tok.decode(np.asarray(ids, dtype=np.int32)))

    return encode, decode, True
