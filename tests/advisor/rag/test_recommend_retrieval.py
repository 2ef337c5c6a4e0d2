"""Embed, rerank and RAG runs ranked by their own unit within a scenario, with evidence; bad asks in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.recommend.retrieval import NoRetrievalRuns, load_runs, rank


def _save(root: Path, run_id: str, task: str, scenario: str, **summary: object) -> None:
    d = root / run_id
    d.mkdir(parents=True)
    body = {"run_id": run_id, "task": task, "scenario": scenario, "summary": {"verdict": "VALID", **summary}}
    if task == "rag":
        body["engines"] = {"embed": {"adapter": "sentence-transformers", "model": "/m/minilm"},
                           "generate": {"adapter": "own", "model": "/m/tiny"}}
    else:
        body["engine"] = {"adapter": f"eng-{run_id}", "model": "/m/minilm"}
    (d / "result.json").write_text(json.dumps(body))


def test_rag_runs_rank_by_cost_per_answer_within_the_slo(tmp_path: Path) -> None:
    _save(tmp_path, "a", "rag", "rag", slo_met=True, usd_per_good_answer=3e-5, goodput_rps=1.0, ttfa_ms={"p95": 300})
    _save(tmp_path, "b", "rag", "rag", slo_met=True, usd_per_good_answer=2e-5, goodput_rps=1.5, ttfa_ms={"p95": 900})
    _save(tmp_path, "c", "rag", "rag", slo_met=False, usd_per_good_answer=1e-5, goodput_rps=3.0)  # cheap, misses
    _save(tmp_path, "d", "rag", "rag", slo_met=True, usd_per_good_answer=2e-5, goodput_rps=1.5, ttfa_ms={"p95": 400})
    _save(tmp_path, "e", "rag", "rag", verdict="INVALID", reasons=["too few"], usd_per_good_answer=1e-6)
    _save(tmp_path, "f", "rag", "other", slo_met=True, usd_per_good_answer=1e-9)
    _save(tmp_path, "g", "embed", "rag", slo_met=True)  # another task: not read
    [r] = rank(load_runs(tmp_path, "rag"), "rag", "rag")
    assert [o.run_id for o in r.options] == ["d", "b", "a", "c"]  # SLO first, $ per good answer, then p95 TTFA
    assert r.excluded[0].run_id == "e" and r.excluded[0].reason == "INVALID: too few"
    assert "$ per answer within the SLO, lowest first" in r.ranked_by
    assert r.options[0].figures["ttfa_ms_p95"] == 400 and "generate own (tiny)" in r.options[0].engines
    assert [x.scenario for x in rank(load_runs(tmp_path, "rag"), "rag")] == ["other", "rag"]  # one per scenario


def test_unpriced_embed_runs_rank_by_throughput(tmp_path: Path) -> None:
    _save(tmp_path, "x", "embed", "embed-query", slo_met=True, inputs_per_s=50.0, usd_per_million_tokens=0.2)
    _save(tmp_path, "y", "embed", "embed-query", slo_met=True, inputs_per_s=80.0)
    [r] = rank(load_runs(tmp_path, "embed"), "embed")
    assert [o.run_id for o in r.options] == ["y", "x"] and "inputs/s, highest first" in r.ranked_by
    _save(tmp_path, "z", "rerank", "rerank", slo_met=True, usd_per_million_inputs=0.5)
    _save(tmp_path, "w", "rerank", "rerank", slo_met=True, usd_per_million_inputs=0.3)
    [rr] = rank(load_runs(tmp_path, "rerank"), "rerank")
    assert [o.run_id for o in rr.options] == ["w", "z"] and "$ per 1M passages reranked" in rr.ranked_by
    with pytest.raises(NoRetrievalRuns, match="advisor rag"):
        rank(load_runs(tmp_path, "rag"), "rag")


def test_the_recommend_command_ranks_retrieval_runs(tmp_path: Path) -> None:
    from advisor_cli import cli

    _save(tmp_path, "b", "rag", "rag", slo_met=True, usd_per_good_answer=2e-5, goodput_rps=1.5)
    _save(tmp_path, "a", "rag", "rag", slo_met=True, usd_per_good_answer=3e-5, goodput_rps=1.0)
    out = CliRunner().invoke(cli, ["recommend", "--task", "rag", "--embed-runs", str(tmp_path)], terminal_width=300)
    assert out.exit_code == 0, out.output
    assert out.output.index("[run b]") < out.output.index("[run a]") and "1. embed sentence-transformers" in out.output
    js = CliRunner().invoke(cli, ["recommend", "--task", "rag", "--embed-runs", str(tmp_path), "--json"])
    assert [o["run_id"] for o in json.loads(js.output)[0]["options"]] == ["b", "a"]
    none = CliRunner().invoke(cli, ["recommend", "--task", "embed", "--embed-runs", str(tmp_path)])
    assert none.exit_code == 2 and "no saved embed run" in none.output
    missing = CliRunner().invoke(cli, ["recommend", "--task", "rag", "--embed-runs", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "is not a folder of saved runs" in missing.output
