"""HF LLaMA folder -> stateful OpenVINO IR that openvino-genai's pipelines load, plus tokenizer IRs.

Route: trace `ov_graph.TraceableLlama` (same weights, explicit KV tensors)
with `openvino.convert_model`, name the inputs/outputs the way
openvino-genai expects, turn the KV inputs/outputs into internal state with
OpenVINO's MakeStateful pass (what optimum-intel does), and save
openvino_model.xml; `openvino_tokenizers.convert_tokenizer` writes
openvino_tokenizer.xml / openvino_detokenizer.xml. fp16 stores weights in
fp16 (`compress_to_fp16`); compute precision is a runtime hint.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from adapters.formats.check import ConversionError

PRECISIONS = ("fp32", "fp16")
ALIASES = {"f32": "fp32", "f16": "fp16"}
FILENAME = "openvino_model.xml"


def _require_openvino():
    try:
        import openvino as ov
    except ImportError as e:
        raise ConversionError("OpenVINO conversion needs openvino: pip install -e '.[openvino]'") from e
    return ov


def write_openvino(model_path: Path, out_dir: Path, precision: str) -> None:
    """Convert to a stateful OpenVINO IR in `out_dir` (plus tokenizer IRs when openvino-tokenizers is present)."""
    import torch

    from adapters.formats.gguf import load_weights
    from adapters.formats.ov_graph import TraceableLlama

    ov = _require_openvino()
    from openvino import opset13
    from openvino._offline_transformations import apply_make_stateful_transformation

    assert precision in PRECISIONS, precision
    cfg = json.loads((model_path / "config.json").read_text())
    if cfg.get("model_type") not in ("llama", "qwen2", "mistral"):
        raise ConversionError(f"OpenVINO converter supports model_type llama, qwen2 and mistral, "
                              f"got {cfg.get('model_type')!r}")
    weights = {k: torch.from_numpy(v) for k, v in load_weights(model_path).items()}
    module = TraceableLlama(cfg, weights).eval()
    n_layers, n_kv, hd = module.n_layers, module.n_kv, module.head_dim
    b, t, p = 2, 3, 2
    example = (torch.ones(b, t, dtype=torch.long), torch.ones(b, p + t, dtype=torch.long),
               torch.arange(p, p + t).repeat(b, 1), torch.arange(b, dtype=torch.int32),
               *[torch.zeros(b, n_kv, p, hd) for _ in range(2 * n_layers)])
    shapes = [ov.PartialShape([-1, -1])] * 3 + [ov.PartialShape([-1])] + \
        [ov.PartialShape([-1, n_kv, -1, hd])] * (2 * n_layers)
    types = [ov.Type.i64] * 3 + [ov.Type.i32] + [ov.Type.f32] * (2 * n_layers)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit tracer deprecation/trace warnings: expected for this export
        model = ov.convert_model(module, example_input=example, input=list(zip(shapes, types, strict=True)))
    kv_in = [f"past_key_values.{i}.{kind}" for i in range(n_layers) for kind in ("key", "value")]
    kv_out = [f"present.{i}.{kind}" for i in range(n_layers) for kind in ("key", "value")]
    for port, name in zip(model.inputs, ["input_ids", "attention_mask", "position_ids", "beam_idx", *kv_in], strict=True):
        port.get_tensor().set_names({name})
    for port, name in zip(model.outputs, ["logits", *kv_out], strict=True):
        port.get_tensor().set_names({name})
    apply_make_stateful_transformation(model, dict(zip(kv_in, kv_out, strict=True)))
    _zero_state_init(model, opset13)
    out_dir.mkdir(parents=True, exist_ok=True)
    ov.save_model(model, str(out_dir / FILENAME), compress_to_fp16=precision == "fp16")
    _write_tokenizer(model_path, out_dir)
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        if (model_path / name).is_file():
            (out_dir / name).write_bytes((model_path / name).read_bytes())


def _zero_state_init(model, opset13) -> None:
    """Each KV state starts as zeros [batch-of-input_ids, n_kv, 0, head_dim] (as optimum-intel builds it)."""
    batch = opset13.gather(opset13.shape_of(model.input("input_ids"), output_type="i64"),
                           opset13.constant([0]), opset13.constant(0))
    for op in model.get_ops():
        if op.get_type_name() != "ReadValue":
            continue
        dims = [d.min_length for d in op.get_output_partial_shape(0)]
        parts = [batch] + [opset13.constant(np.array([d], dtype=np.int64)) for d in dims[1:]]
        zeros = opset13.broadcast(opset13.constant(0.0, dtype=op.get_output_element_type(0)), opset13.concat(parts, 0))
        op.set_arguments([zeros])
    model.validate_nodes_and_infer_types()


def _write_tokenizer(model_path: Path, out_dir: Path) -> None:
    if not (model_path / "tokenizer.json").is_file():
        return  # the IR runs on token ids; there is no tokenizer to convert
    try:
        import openvino as ov
        from openvino_tokenizers import convert_tokenizer
    except ImportError as e:
        raise ConversionError("OpenVINO's tokenizer IRs need openvino-tokenizers and transformers: "
                              "pip install -e '.[openvino]'") from e
    from adapters.formats.tokenizer_family import detect, hf_tokenizer

    hf_tok = hf_tokenizer(model_path)
    try:
        tok, detok = convert_tokenizer(hf_tok, with_detokenizer=True, skip_special_tokens=True)
    except Exception as e:  # openvino-tokenizers raises several types for a tokenizer it cannot represent
        raise ConversionError(f"openvino-tokenizers cannot convert this {detect(model_path).describe()} tokenizer "
                              f"({type(e).__name__}: {str(e)[:200]}); use a format whose tokenizer agrees "
                              "(`advisor verify`), or send token ids") from e
    ov.save_model(tok, str(out_dir / "openvino_tokenizer.xml"))
    ov.save_model(detok, str(out_dir / "openvino_detokenizer.xml"))


def compile_config(precision: str, kv_cache_precision: str = "f32", threads: int | None = None) -> dict[str, str]:
    """CPU plugin properties: compute precision f32 (fp16 weights are upcast), explicit KV-cache precision."""
    cfg = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": kv_cache_precision}
    if threads:
        cfg["INFERENCE_NUM_THREADS"] = str(threads)
    return cfg


def logits_fn(out_dir: Path):
    """A function prompt ids -> logits [T, vocab], running the stateful IR with OpenVINO directly."""
    ov = _require_openvino()
    compiled = ov.Core().compile_model(str(out_dir / FILENAME), "CPU", compile_config("fp32"))
    req = compiled.create_infer_request()

    def fn(ids: list[int]) -> np.ndarray:
        req.reset_state()
        x = np.array([list(ids)], dtype=np.int64)
        req.infer({"input_ids": x, "attention_mask": np.ones_like(x), "position_ids": np.arange(len(ids))[None],
                   "beam_idx": np.zeros(1, dtype=np.int32)})
        return np.array(req.get_tensor("logits").data[0], dtype=np.float32)

    return fn


def tokenizer_fn(out_dir: Path):
    """(encode, decode, skip_special) through the openvino-tokenizers IRs (the detokenizer skips specials)."""
    ov = _require_openvino()
    tok_xml, detok_xml = out_dir / "openvino_tokenizer.xml", out_dir / "openvino_detokenizer.xml"
    if not tok_xml.is_file() or not detok_xml.is_file():
        raise ConversionError(f"{out_dir} has no tokenizer IRs; reconvert with openvino-tokenizers installed")
    import openvino_tokenizers  # noqa: F401  (registers the tokenizer operations with OpenVINO)

    core = ov.Core()
    tok, detok = core.compile_model(str(tok_xml), "CPU"), core.compile_model(str(detok_xml), "CPU")

    def encode(text: str) -> list[int]:
        return [int(i) for i in tok([text])["input_ids"][0]]

    def decode(ids: list[int]) -> str:
        return str(detok(np.array([ids], dtype=np.int64))["string_output"][0])

    return encode, decode, True
