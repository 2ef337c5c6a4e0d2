"""The report's embedding and rerank drift: `advisor verify` documents matched to the embed and rerank runs' rows."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.recommend.retrieval import load_runs, rank
from reports.html import render_report
from reports.retrieval_drift import drift_context, load_drift_docs


def _run(root: Path, run_id: str, adapter: str, precision: str, passages_per_s: float) -> None:
    (root / run_id).mkdir(parents=True)
    (root / run_id / "result.json").write_text(json.dumps({
        "run_id": run_id, "task": "rerank", "scenario": "rerank",
        "engine": {"adapter": adapter, "precision": precision, "model": "/cache/models/ce"},
        "summary": {"verdict": "VALID", "slo_met": True, "inputs_per_s": passages_per_s}}))


def _verify(root: Path, name: str, tau_int8: float) -> None:
    (root / "verify").mkdir(parents=True, exist_ok=True)
    rows = [{"engine": "onnxruntime-rerank", "precision": p, "status": "ok", "k": 10, "topk_overlap_mean": o,
             "topk_overlap_min": o - 0.1, "kendall_tau_mean": t, "kendall_tau_min": t - 0.05,
             "score_max_abs_diff": d} for p, o, t, d in (("fp32", 1.0, 1.0, 3e-8), ("int8", 0.93, tau_int8, 0.012))]
    rows.append({"engine": "openvino-rerank", "precision": "int8", "status": "error", "error": "missing openvino"})
    (root / "verify" / name).write_text(json.dumps({"task": "rerank", "model": "ce", "reference":
                                                    "sentence-transformers-rerank fp32", "quality_drift": rows}))


def test_each_rerank_run_shows_its_engines_drift_beside_its_speed(saved_runs, tmp_path: Path) -> None:
    _run(tmp_path, "run-int8", "onnxruntime-rerank", "int8", 900.0)
    _run(tmp_path, "run-st", "sentence-transformers-rerank", "fp32", 300.0)
    _verify(tmp_path, "20261128-100000-ce.json", tau_int8=0.5)
    _verify(tmp_path, "20261128-110000-ce.json", tau_int8=0.961)  # the newer document is the one shown
    runs = load_runs(tmp_path, "rerank")
    ctx = drift_context(tmp_path, runs)
    assert ctx["by_run"]["run-int8"] == ("top-10 agreement 0.930 (min 0.830), Kendall tau-b 0.9610 (min 0.9110), "
                                         "max |score diff| 1.20e-02 (20261128-110000-ce.json)")
    assert ctx["by_run"]["run-st"].startswith("not verified: no `advisor verify --model ce` row for "
                                              "sentence-transformers-rerank fp32")
    html = render_report(saved_runs[:1], retrieval=rank(runs, "rerank"), retrieval_drift=ctx)
    section = html.split('<section id="retrieval">')[1].split("</section>")[0]
    row = section.split("run-int8")[0].rsplit("<tr>", 1)[1]
    assert "inputs_per_s 900" in row and "Kendall tau-b 0.9610" in row  # speed and drift in one row
    assert "rerank quality drift: ce" in section and "not measured: missing openvino" in section


def test_unreadable_or_other_documents_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "a.json").write_text("{not json")
    (tmp_path / "verify" / "b.json").write_text(json.dumps({"variants": []}))  # a generation verify document
    assert load_drift_docs(tmp_path) == [] and load_drift_docs(tmp_path / "none") == []
    assert drift_context(tmp_path, [])["tables"] == []
