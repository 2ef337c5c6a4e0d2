"""Conversion: cache and manifest behaviour, clean errors, and real round trips per format (engines group)."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
from click.testing import CliRunner

import adapters.formats as conv
from adapters.formats import ConversionError, convert, read_manifest
from advisor_cli.models import convert_command
from tests.adapters.formats.models import tiny_model


def test_convert_is_cached_and_reconverts_when_the_source_changes(model_copy, fake_format):
    out = convert(model_copy, "onnx", "fp32")
    assert out == model_copy.resolve() / "converted" / "onnx-fp32"
    man = read_manifest(out)
    assert man["precision"] == "fp32" and man["check"]["argmax_agreement"] == 1.0
    t0 = time.perf_counter()
    assert convert(model_copy, "onnx", "fp32") == out
    assert time.perf_counter() - t0 < 1.0 and fake_format["writes"] == 1  # second call: cached, instant
    convert(model_copy, "onnx", "fp32", force=True)
    assert fake_format["writes"] == 2
    cfg = json.loads((model_copy / "config.json").read_text())
    cfg["rms_norm_eps"] = 1e-6
    (model_copy / "config.json").write_text(json.dumps(cfg))
    convert(model_copy, "onnx", "fp32")
    assert fake_format["writes"] == 3  # changed source: reconverted


def test_a_converter_that_changes_the_function_fails_loudly(model_copy, fake_format):
    fake_format["offset"] = 0.5  # logits drift by up to 0.5: far beyond the fp32 tolerance
    with pytest.raises(ConversionError, match=r"onnx fp32 .*max abs diff .*tolerance"):
        convert(model_copy, "onnx", "fp32")
    assert read_manifest(model_copy / "converted" / "onnx-fp32") is None  # nothing half-written is cached
    assert not [p for p in (model_copy / "converted").iterdir() if p.name.startswith(".")]


def test_a_converter_whose_tokenizer_differs_fails_naming_the_family(model_copy, fake_format):
    fake_format["shift"] = 1  # same logits, other ids for the same text
    with pytest.raises(ConversionError, match=r"converted byte-level BPE tokenizer tokenizes text differently.*"
                                              r"0/10 texts give the same ids"):
        convert(model_copy, "onnx", "fp32")
    assert read_manifest(model_copy / "converted" / "onnx-fp32") is None


def test_manifest_records_the_text_check_and_the_engine_limits(model_copy, fake_format):
    man = read_manifest(convert(model_copy, "openvino", "fp32"))
    assert man["text_check"]["ok"] and man["text_check"]["texts"] == 10
    assert man["max_context"] == 4096 and man["limits"] == []


def test_first_use_reports_a_conversion_only_when_it_ran(model_copy, fake_format, monkeypatch):
    # was: judged by the manifest's mtime before and after convert(), so another process rewriting the manifest
    # meanwhile (`advisor models convert --force` in a second terminal) made a cached start report a conversion
    from adapters.engine_thread import convert_on_first_use

    *_, convert_s = convert_on_first_use(str(model_copy), "onnx", "fp32")
    assert convert_s is not None and fake_format["writes"] == 1
    fingerprint = conv.fingerprint

    def fingerprint_while_another_process_rewrites_the_manifest(path):
        manifest = path / "converted" / "onnx-fp32" / "manifest.json"
        manifest.write_text(manifest.read_text())
        ns = manifest.stat().st_mtime_ns + 10**9
        os.utime(manifest, ns=(ns, ns))
        return fingerprint(path)

    monkeypatch.setattr(conv, "fingerprint", fingerprint_while_another_process_rewrites_the_manifest)
    *_, convert_s = convert_on_first_use(str(model_copy), "onnx", "fp32")
    assert convert_s is None and fake_format["writes"] == 1  # the cached conversion was used: no conversion time
    assert conv.ensure_converted(model_copy, "onnx", "fp32").fresh is False
    assert conv.ensure_converted(model_copy, "onnx", "fp32", force=True).fresh is True


def test_missing_model_folder_names_the_fix(tmp_path):
    with pytest.raises(ConversionError, match="does not exist.*advisor models create"):
        convert(tmp_path / "nope", "gguf")


def test_folder_without_config_is_refused(tmp_path):
    (tmp_path / "m").mkdir()
    with pytest.raises(ConversionError, match="no config.json"):
        convert(tmp_path / "m", "openvino")


def test_corrupt_weights_are_refused_before_any_converter_runs(model_copy, fake_format):
    w = model_copy / "model.safetensors"
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])  # truncated download
    with pytest.raises(ConversionError, match="not a valid safetensors file.*corrupt"):
        convert(model_copy, "gguf", "fp32")
    w.write_bytes(b"garbage" * 10)
    with pytest.raises(ConversionError, match="corrupt"):
        convert(model_copy, "onnx", "fp32")
    assert fake_format["writes"] == 0


@pytest.mark.parametrize(("fmt", "edit", "message"), [
    ("gguf", {"num_attention_heads": None}, "lacks the key 'num_attention_heads'"),
    ("openvino", {"num_hidden_layers": None}, "lacks the key 'num_hidden_layers'"),
    ("onnx", {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"]}, "gpt_neox.*is not supported"),
])
def test_a_config_no_converter_can_read_is_one_clear_error_before_any_converter_runs(model_copy, fake_format, fmt,
                                                                                    edit, message):
    # was a KeyError reported as "a bug" (missing keys), and onnxruntime-genai's builder traceback (other families)
    cfg = json.loads((model_copy / "config.json").read_text())
    cfg.update({k: v for k, v in edit.items() if v is not None})
    for k in (k for k, v in edit.items() if v is None):
        del cfg[k]
    (model_copy / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ConversionError, match=message):
        convert(model_copy, fmt, "fp32")
    assert fake_format["writes"] == 0


@pytest.mark.parametrize(("fmt", "precision", "valid"), [("onnx", "fp16", "fp32, int8, int4"),
                                                         ("gguf", "bf16", "fp32, fp16, q8_0, q4_0"),
                                                         ("openvino", "int4", "fp32, fp16")])
def test_unsupported_precision_lists_the_valid_ones(model_copy, fmt, precision, valid):
    with pytest.raises(ConversionError, match=valid):
        convert(model_copy, fmt, precision)


def test_precision_aliases():
    assert conv.normalize_precision("gguf", "int8") == "q8_0"
    assert conv.normalize_precision("onnx", "q4_0") == "int4"
    with pytest.raises(ConversionError, match="unknown format"):
        conv.normalize_precision("tflite", "fp32")


def test_missing_engine_package_names_the_extra(model_copy, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime_genai", None)  # import fails as if not installed
    with pytest.raises(ConversionError, match=r"pip install -e '\.\[onnx\]'"):
        convert(model_copy, "onnx", "fp32")
    monkeypatch.setitem(sys.modules, "openvino", None)
    with pytest.raises(ConversionError, match=r"pip install -e '\.\[openvino\]'"):
        convert(model_copy, "openvino", "fp32")
    monkeypatch.setitem(sys.modules, "gguf", None)
    with pytest.raises(ConversionError, match=r"pip install -e '\.\[llamacpp\]'"):
        convert(model_copy, "gguf", "fp32")


def test_cli_prints_the_path_last(model_copy, fake_format):
    res = CliRunner().invoke(convert_command, [str(model_copy), "--to", "onnx", "--precision", "fp32"])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip().splitlines()[-1] == str(model_copy.resolve() / "converted" / "onnx-fp32")
    bad = CliRunner().invoke(convert_command, [str(model_copy), "--to", "onnx", "--precision", "int4",
                                               "--precision", "fp16"])
    assert bad.exit_code == 2 and "int4" in bad.output  # bad input: refused before int4 converts
    assert fake_format["writes"] == 1


def test_cli_says_when_the_format_caps_the_context_at_a_sliding_window(tmp_path, fake_format):
    # was: the cap was only in the manifest's `limits`; a user benchmarking long prompts learnt it from nothing
    from model_cache.create import create_model

    model = create_model("mis", "tiny-mistral", root=tmp_path)
    for _ in range(2):  # converted, then cached: said both times
        res = CliRunner().invoke(convert_command, [str(model), "--to", "openvino", "--no-check"])
        assert res.exit_code == 0, res.output
        (line,) = [line for line in res.stderr.splitlines() if "window" in line]
        assert line.startswith("openvino fp32: OpenVINO GenAI (continuous batching) has no sliding-window attention")
        assert "capped at the 64-token window (the trained context is 4096)" in line
    assert fake_format["writes"] == 1


# ---- real converters (engines group) ---------------------------------------------------------------

ROUND_TRIPS = [("gguf", "fp32", "gguf"), ("gguf", "fp16", "gguf"), ("gguf", "q8_0", "llama_cpp"),
               ("gguf", "q4_0", "llama_cpp"), ("onnx", "fp32", "onnxruntime_genai"),
               ("onnx", "int4", "onnxruntime_genai"), ("openvino", "fp32", "openvino"),
               ("openvino", "fp16", "openvino")]


@pytest.mark.engines
@pytest.mark.parametrize(("fmt", "precision", "package"), ROUND_TRIPS, ids=[f"{f}-{p}" for f, p, _ in ROUND_TRIPS])
def test_round_trip_matches_the_reference(fmt, precision, package):
    pytest.importorskip(package)
    if fmt == "gguf":
        pytest.importorskip("llama_cpp")  # the check runs the GGUF in llama.cpp itself
    model = tiny_model()
    out = convert(model, fmt, precision)
    check = read_manifest(out)["check"]
    if precision == "fp32":
        assert check["rel_max_abs_diff"] < 1e-3 and check["argmax_agreement"] == 1.0
    else:
        assert check["kl"] < 0.5 * check["kl_uniform"]
    t0 = time.perf_counter()
    assert convert(model, fmt, precision) == out
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.engines
def test_gguf_without_the_rotary_permutation_is_caught(model_copy, monkeypatch):
    pytest.importorskip("gguf")
    pytest.importorskip("llama_cpp")
    from adapters.formats import gguf as g

    monkeypatch.setattr(g, "_permute", lambda w, n_head: w)  # the classic silent converter bug
    with pytest.raises(ConversionError, match="gguf fp32"):
        convert(model_copy, "gguf", "fp32")


DAMAGE = [("llama_cpp", "gguf", "model.gguf"), ("onnxruntime", "onnx", "model.onnx"),
          ("openvino", "openvino", "openvino_model.xml")]


@pytest.mark.engines
@pytest.mark.parametrize(("engine", "fmt", "filename"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_a_damaged_cached_conversion_names_the_fix(model_copy, engine, fmt, filename):
    import adapters

    why = adapters.why_unavailable(engine)
    if why:
        pytest.skip(why)
    out = convert(model_copy, fmt, "fp32")
    (out / filename).write_bytes(b"\x00garbage" * 64)
    a = adapters.create(engine, str(model_copy))
    with pytest.raises(ConversionError, match="--force"):
        a.start()
    a.close()
