"""`advisor verify`: per-variant agreement with own_engine fp32, the exit status, and the JSON document."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from advisor.quality.verify import Variant, VariantResult, VerifyReport, all_variants, verify
from advisor_cli.verify import verify_command
from tests.adapters.formats.models import tiny_model


def test_own_engine_fp32_agrees_with_its_reference():
    report = verify(tiny_model(), n_tokens=8, n_prompts=2,
                    variants=(Variant("own", "hf-safetensors", "fp32", strict=True),))
    (r,) = report.results
    assert r.status == "agree" and r.token_agreement == 1.0 and r.first_divergence is None
    assert r.tokens_compared == 16 and report.ok


def test_an_fp32_mismatch_fails_the_report_but_quantized_drift_does_not():
    drift = VariantResult("onnxruntime", "ONNX Runtime GenAI", "onnx", "int4", "quality drift", 32, 0.5, 3)
    assert VerifyReport("m", 32, ((1, 2),), (drift,)).ok
    bad = VariantResult("llama_cpp", "llama.cpp", "gguf", "fp32", "MISMATCH", 32, 0.9, 17)
    report = VerifyReport("m", 32, ((1, 2),), (drift, bad))
    assert not report.ok
    doc = json.loads(report.to_json())
    assert doc["ok"] is False and doc["variants"][1]["first_divergence"] == 17


def test_unavailable_engine_is_reported_not_fatal(monkeypatch):
    import adapters

    monkeypatch.setattr(adapters, "why_unavailable", lambda name: "missing package(s) x: pip install -e '.[x]'")
    report = verify(tiny_model(), n_tokens=4, n_prompts=1, variants=(Variant("openvino", "openvino", "fp32"),))
    assert report.results[0].status == "unavailable" and "pip install" in report.results[0].detail
    assert report.ok


def test_cli_json_is_one_document():
    res = CliRunner().invoke(verify_command, ["--model", str(tiny_model()), "--tokens", "6", "--prompts", "1",
                                              "--engine", "own", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [v["adapter"] for v in doc["variants"]] == ["own"] and doc["variants"][0]["status"] == "agree"


def test_cli_unknown_engine_lists_choices():
    res = CliRunner().invoke(verify_command, ["--engine", "tflite"])
    assert res.exit_code != 0 and "llama_cpp" in res.output


def test_a_gguf_file_as_the_model_says_to_import_it_first(tmp_path):
    # was: "no model 'm.gguf': no such folder", though the file is there
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    res = CliRunner().invoke(verify_command, ["--model", str(gguf)])
    assert res.exit_code == 2
    [line] = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert "verify takes a model folder or a cached model name, not a GGUF file" in line
    assert "`advisor models import FILE.gguf`" in line and "no such folder" not in res.output


@pytest.mark.engines
def test_every_available_fp32_variant_agrees_token_for_token():
    report = verify(tiny_model(), n_tokens=24, n_prompts=2)
    ran = [r for r in report.results if r.status != "unavailable"]
    assert len(ran) > 1, "no engine extra installed: install one to run this test"
    strict = {(v.adapter, v.precision) for v in all_variants() if v.strict}
    for r in ran:
        if (r.adapter, r.precision) in strict:
            assert r.status == "agree", r
            assert r.adapter == "own" or (r.kl is not None and r.kl < 1e-6)
            assert r.first_divergence is None and r.token_agreement == 1.0
        else:
            assert r.status in ("agree", "quality drift"), r
            assert r.token_agreement is not None
    assert report.ok


def test_piped_table_prints_whole_rows_and_each_fix_in_full(monkeypatch):
    # was: rich fitted 80 columns when piped ("onnxr…", "unava…") and the detail was cut at 60 characters
    # ("pip install -e '.[llamac"), so a log or `| less` showed neither the variant nor the fix
    import advisor.quality.verify

    why = "missing package(s) onnxruntime_genai: pip install -e '.[onnx]'"
    results = (VariantResult("own", "own_engine", "hf-safetensors", "fp32", "agree", 6, 1.0, text_agreement=1.0),
               *(VariantResult("onnxruntime", "onnxruntime", "onnx", p, "unavailable", detail=why)
                 for p in ("fp32", "int8", "int4")))
    monkeypatch.setattr(advisor.quality.verify, "verify",
                        lambda *a, **k: VerifyReport("/some/models/tiny", 6, ((1, 2),), results))
    res = CliRunner().invoke(verify_command, ["--tokens", "6", "--prompts", "1"])
    assert res.exit_code == 0, res.output
    assert "…" not in res.stdout
    lines = res.stdout.splitlines()
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert rows[0] == ["own", "hf-safetensors", "fp32", "agree", "100%", "-", "-", "-", "100%", "-", "-", "-"]
    assert rows[1:] == [["onnxruntime", "onnx", p, "unavailable [1]", "-", "-", "-", "-", "-", "-", "-", "-"]
                        for p in ("fp32", "int8", "int4")]  # one line a variant: nothing wrapped
    assert f"[1] {why}" in lines


def test_every_option_has_help():
    assert [o.opts[0] for o in verify_command.params if not o.help] == []  # --prompts had none
