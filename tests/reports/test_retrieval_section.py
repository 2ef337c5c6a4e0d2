"""The report's section of embed, rerank and RAG runs: each scenario's ranking with its evidence."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.recommend.retrieval import load_runs, rank
from reports.html import render_report


def _save(root: Path, run_id: str, **summary: object) -> None:
    (root / run_id).mkdir(parents=True)
    (root / run_id / "result.json").write_text(json.dumps({
        "run_id": run_id, "task": "rag", "scenario": "rag",
        "engines": {"embed": {"adapter": "sentence-transformers", "model": "/m/minilm"},
                    "generate": {"adapter": "own", "model": "/m/tiny"}},
        "summary": {"verdict": "VALID", "slo_met": True, **summary}}))


def test_report_ranks_rag_runs_with_evidence(saved_runs, tmp_path: Path) -> None:
    _save(tmp_path, "run-dear", usd_per_good_answer=4e-5, goodput_rps=0.5, bottleneck="embed")
    _save(tmp_path, "run-cheap", usd_per_good_answer=1e-5, goodput_rps=2.0, bottleneck="generate")
    _save(tmp_path, "run-bad", verdict="INVALID", reasons=["too few answers"])
    html = render_report(saved_runs[:1], retrieval=rank(load_runs(tmp_path, "rag"), "rag"))
    section = html.split('<section id="retrieval">')[1].split("</section>")[0]
    assert section.index("run-cheap") < section.index("run-dear") < section.index("run-bad")
    assert "bottleneck generate" in section and "$ per answer within the SLO, lowest first" in section
    assert "INVALID: too few answers" in section and "generate own (tiny)" in section


def test_no_retrieval_runs_no_section(saved_runs) -> None:
    assert '<section id="retrieval">' not in render_report(saved_runs[:1])


def test_the_report_command_reads_the_embed_runs_folder(runs_root: Path, saved_runs, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from advisor_cli.report import report_command

    _save(tmp_path / "emb", "run-one", usd_per_good_answer=2e-5, goodput_rps=1.0)
    out = tmp_path / "r.html"
    res = CliRunner().invoke(report_command, [saved_runs[0].run_id, "--runs", str(runs_root), "-o", str(out),
                                              "--embed-runs", str(tmp_path / "emb")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert '<section id="retrieval">' in out.read_text() and "run-one" in out.read_text()
    res = CliRunner().invoke(report_command, [saved_runs[0].run_id, "--runs", str(runs_root), "-o", str(out),
                                              "--embed-runs", str(tmp_path / "none")], catch_exceptions=False)
    assert res.exit_code == 0 and '<section id="retrieval">' not in out.read_text()
