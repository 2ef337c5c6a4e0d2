"""The pipeline's pieces without engines: exact search against a brute-force scan, the scenario, and a run's
summary from hand-made records (stage times, bottleneck, goodput, SLO, cost per answer)."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.rag.drive import RagRecord, prompt_text, word_ids
from advisor.rag.index import VectorIndex
from advisor.rag.metrics import summarise
from scenarios.catalog import scenario_from_dict
from scenarios.errors import ScenarioError
from scenarios.rag_schedule import build_rag_schedule, load_rag_scenario, passages

MS = 1_000_000


def test_search_returns_what_a_brute_force_scan_does() -> None:
    rng = np.random.default_rng(3)
    m = rng.normal(size=(300, 24)).astype(np.float32)
    m[17] = m[4] * 3.0  # same direction as passage 4: a tie, which the lower number wins
    idx = VectorIndex.from_vectors(m)
    for q in [*rng.normal(size=(20, 24)), m[4]]:
        got, sims = idx.search(q, 10)
        cos = [(float(np.dot(r, q) / np.linalg.norm(r) / np.linalg.norm(q)), i) for i, r in enumerate(m)]
        want = sorted(cos, key=lambda t: (-round(t[0], 5), t[1]))[:10]
        assert list(got) == [i for _, i in want]
        assert sims == pytest.approx([c for c, _ in want], abs=1e-5)
    assert idx.search(m[4], 2)[0] == (4, 17)
    assert idx.search(m[0], 1000)[0][0] == 0 and len(idx.search(m[0], 1000)[0]) == 300  # k past n: all, ranked
    with pytest.raises(ValueError, match="width 24"):
        idx.search(np.ones(5), 3)


def test_the_shipped_scenario_and_its_schedule() -> None:
    sc = load_rag_scenario("rag")
    a, b = build_rag_schedule(sc, 1), build_rag_schedule(sc, 1)
    assert a == b and len(a.measured) >= 30  # the fit block: ~40 measured questions, enough for a p95
    assert all(len(r.query.split()) == 12 for r in a.requests)
    assert len(passages(sc.workload.rag)) == 797 and sc.slos.ttft_ms == 1000
    with pytest.raises(ScenarioError, match="not rag"):
        load_rag_scenario("chat")
    with pytest.raises(ValueError, match="cannot exceed top_k"):
        _scenario(top_k=2, context=3)


def test_prompt_and_word_ids() -> None:
    text = prompt_text("who went", ["one two", "three"])
    assert text.index("Passage 1: one two") < text.index("Passage 2: three") < text.index("Question: who went")
    ids = word_ids(text, 100)
    assert len(ids) == len(text.split()) and all(0 <= i < 100 for i in ids) and ids == word_ids(text, 100)


def _scenario(top_k: int = 5, context: int = 2, rate: float = 10.0, slos: dict | None = None):
    return scenario_from_dict({"name": "r", "description": "a rag scenario for the metrics tests",
                               "workload": {"task": "rag", "rag": {"query_words": 4, "passage_words": 8,
                                                                   "top_k": top_k, "context_passages": context,
                                                                   "answer_tokens": 8}},
                               "arrival": {"process": "constant", "rate_rps": rate}, "duration_s": 10.0,
                               "warmup_s": 1.0, "slos": slos or {"ttft_ms": 100, "e2e_ms": 200, "percentile": 95}})


def _records(sch, stage_ms, decode_ms=20.0, n_answer=8):
    """Records with the given stage times (embed, search, rerank, generation TTFT), each request on time."""
    out = []
    for i, p in enumerate(sch.requests):
        t = int(p.t_s * 1e9) + MS
        e, s, r, g = (int(x * MS) for x in stage_ms(i))
        out.append(RagRecord(i, p.warmup, t, t, t + e, t + e + s, t + e + s + r, t + e + s + r + g,
                             t + e + s + r + g + int(decode_ms * MS), n_prompt=50, n_answer=n_answer, passages=(1, 2)))
    return out


def test_stage_times_add_up_and_the_bottleneck_is_the_largest_share() -> None:
    sch = build_rag_schedule(_scenario())
    recs = _records(sch, lambda i: (30 + i % 3, 0.5, 10, 40))
    s = summarise(sch, recs, has_rerank=True)
    for r in recs:  # the reference: every stage from the stamps, summed, is the end-to-end time
        st = r.stage_ms()
        assert sum(st.values()) == pytest.approx(r.e2e_ms)
        assert st["embed"] + st["search"] + st["rerank"] + r.gen_ttft_ms == pytest.approx(r.ttfa_ms)
    assert s.stage_ms["generate"].p50 == pytest.approx(60.0)  # TTFT 40 + decode 20
    assert s.bottleneck == "generate" and "60 ms is 59%" in s.bottleneck_reason
    assert s.stage_share_p50["embed"] == pytest.approx(31 / 101.5)
    assert s.gen_tpot_ms.p50 == pytest.approx(20 / 7)
    no_rr = summarise(sch, _records(sch, lambda i: (90, 0.5, 0, 40)), has_rerank=False)
    assert set(no_rr.stage_ms) == {"embed", "search", "generate"} and no_rr.bottleneck == "embed"


def test_goodput_slo_and_cost_per_answer() -> None:
    sch = build_rag_schedule(_scenario())
    # every 4th request's first answer token is late (TTFA 150 ms > 100 ms); the rest meet both SLOs
    recs = _records(sch, lambda i: (20, 1, 0, 129 if i % 4 == 0 else 29))
    s = summarise(sch, recs, has_rerank=False, usd_per_hour=3.6)
    measured = [r for r in recs if not r.warmup]
    inside = [r for r in measured if 1e9 <= r.t_done_ns <= 11e9]
    good = [r for r in inside if r.ttfa_ms <= 100 and r.e2e_ms <= 200]
    assert 0 < len(good) < len(inside)
    assert s.answers_per_s == pytest.approx(len(inside) / 10.0)
    assert s.goodput_rps == pytest.approx(len(good) / 10.0)
    assert s.slo_attainment == pytest.approx(len(good) / len(measured))
    assert s.slo_met is False and s.verdict == "VALID"  # p95 TTFA 150 ms > 100 ms
    assert s.usd_per_answer == pytest.approx(3.6 / 3600 / s.answers_per_s)
    assert s.usd_per_good_answer == pytest.approx(3.6 / 3600 / s.goodput_rps)
    fast = summarise(sch, _records(sch, lambda i: (20, 1, 0, 29)), has_rerank=False)
    assert fast.slo_met is True and fast.goodput_rps == pytest.approx(fast.answers_per_s)
    assert fast.usd_per_answer is None  # no price given


def test_failed_stages_are_counted_and_too_few_answers_are_invalid() -> None:
    sch = build_rag_schedule(_scenario(rate=2.0))
    recs = _records(sch, lambda i: (20, 1, 0, 29))
    bad = recs[5]
    recs[5] = RagRecord(bad.index, bad.warmup, bad.t_sched_ns, bad.t_send_ns, bad.t_embed_ns, bad.t_search_ns,
                        None, None, bad.t_search_ns + MS, failed_stage="rerank", error_kind="engine", error="boom")
    s = summarise(sch, recs, has_rerank=True)
    assert s.errors_by_stage == {"rerank": 1} and s.n_ok == s.n_requests - 1
    assert s.verdict == "INVALID" and any("too few for a p95" in r for r in s.reasons)
    assert s.slo_met is None  # 19 answers give no p95


def test_the_scenario_list_names_the_rag_command() -> None:
    from click.testing import CliRunner

    from advisor_cli import cli

    out = CliRunner().invoke(cli, ["scenarios"], terminal_width=200).output
    assert "rag scenarios (run with `advisor rag --scenario NAME`)" in out
    assert "rag" in out.split("rag scenarios")[1]
    bench = CliRunner().invoke(cli, ["bench", "--scenario", "scenarios/rag/rag.yaml"])
    assert bench.exit_code == 2 and "advisor rag --scenario scenarios/rag/rag.yaml" in bench.output


def test_advisor_embed_points_a_rag_scenario_to_its_command() -> None:
    from scenarios.embed_schedule import embed_scenario_names, load_embed_scenario

    with pytest.raises(ScenarioError, match="is a rag scenario: run it with `advisor rag --scenario rag`"):
        load_embed_scenario("rag")
    assert "rag" not in embed_scenario_names()
