"""The report's quality section from `advisor verify --json`: drift per engine and precision, a sample each."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.quality.verify import VariantResult, VerifyReport
from reports.html import render_report
from reports.quality import QualityFileError, load_verify


def _doc(tmp_path: Path) -> Path:
    results = (
        VariantResult("own", "own_engine", "hf-safetensors", "fp32", "agree", 8, 1.0,
                      quality={"top1_agreement": 1.0, "kl": 0.0, "perplexity": 7.1}, sample=" who <lived> alone"),
        VariantResult("llama_cpp", "llama.cpp", "gguf", "q4_0", "quality drift", 8, 0.5, 2,
                      quality={"top1_agreement": 0.83, "kl": 0.123, "perplexity": 8.4}, sample=" who liked fish"),
        VariantResult("openvino", "openvino", "openvino", "fp32", "unavailable", detail="missing"),
    )
    f = tmp_path / "verify.json"
    f.write_text(VerifyReport("/m/smollm2", 8, ((1, 2),), results, "trained: imported from S.gguf", 383).to_json())
    return f


def test_report_shows_drift_and_samples(saved_runs, tmp_path: Path) -> None:
    html = render_report(saved_runs[:1], quality=load_verify(_doc(tmp_path)))
    assert '<section id="quality">' in html
    section = html.split('<section id="quality">')[1].split("</section>")[0]
    assert "trained: imported from S.gguf" in section and "383 tokens" in section and "Alice" in section
    assert "83.0%" in section and "0.123" in section and "who liked fish" in section
    assert "who &lt;lived&gt; alone" in section  # samples are text, escaped
    assert "openvino" not in section  # variants that did not run have no figures to show


def test_no_quality_file_no_section(saved_runs) -> None:
    assert '<section id="quality">' not in render_report(saved_runs[:1])


def test_bad_quality_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(QualityFileError, match="not found"):
        load_verify(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text('{"a": 1}')
    with pytest.raises(QualityFileError, match="not an `advisor verify --json` document"):
        load_verify(tmp_path / "x.json")
