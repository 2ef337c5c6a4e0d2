"""`advisor recommend --quality FILE`: reads `advisor verify --json`'s quality_drift, teacher-forced figure first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.quality.verify import VariantResult, VerifyReport
from advisor_cli.recommend import _quality


def test_verify_json_feeds_recommend(tmp_path: Path) -> None:
    q8 = VariantResult("llama_cpp", "llama.cpp", "gguf", "q8_0", "quality drift", 32, 0.5, 3,
                       quality={"top1_agreement": 0.97, "kl": 0.01, "perplexity": 9.0, "text": "t"})
    ids_only = VariantResult("onnxruntime", "onnxruntime", "onnx", "int4", "quality drift", 32, 0.75, 5)
    gone = VariantResult("openvino", "openvino", "openvino", "fp32", "unavailable", detail="x")
    f = tmp_path / "q.json"
    f.write_text(VerifyReport("m", 32, ((1, 2),), (q8, ids_only, gone), "trained: x").to_json())
    q = _quality(f)
    assert q["llama_cpp/q8_0"] == pytest.approx(0.03)  # 1 - top-1 on text, not 1 - greedy agreement (0.5)
    assert q["onnxruntime/int4"] == pytest.approx(0.25)  # no text figure: greedy agreement
    assert "openvino/fp32" not in q
    assert json.loads(f.read_text())["quality_drift"]["llama_cpp/q8_0"]["weights"] == "trained: x"
