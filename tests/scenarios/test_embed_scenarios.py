"""Embed scenarios: the shipped corpus, its chunks, the schema's task rules and the embed schedule."""

from __future__ import annotations

import pytest

from scenarios import corpus
from scenarios.catalog import ScenarioError, load_scenario, scenario_from_dict, scenario_names
from scenarios.embed_schedule import build_embed_schedule, embed_scenario_names, load_embed_scenario
from scenarios.overrides import Overrides
from scenarios.schedule import build_schedule

BASE = {"name": "e", "description": "an embedding scenario for the tests of the schema",
        "arrival": {"process": "poisson", "rate_rps": 5.0}, "duration_s": 10}


def test_corpus_is_the_four_books_and_chunks_have_exactly_their_words() -> None:
    books = {ref.rsplit(" ", 1)[0] for ref, _ in corpus.verses()}
    assert len(corpus.verses()) == 1900 and books == {"Ruth", "Ecclesiastes", "Proverbs", "Mark"}
    for n in (1, 12, 128):
        chunks = corpus.chunks(n)
        assert chunks and all(len(c.split()) == n for c in chunks)
    assert corpus.chunks(12)[0].startswith("Now it came to pass in the days when the judges ruled")


def test_a_chunk_longer_than_every_book_is_refused_in_one_line() -> None:
    with pytest.raises(ScenarioError, match="longer than every book") as e:
        corpus.chunks(20_000)
    assert "\n" not in str(e.value)


def test_shipped_embed_scenarios_build_with_slos_and_real_text() -> None:
    assert {"embed-query", "embed-ingest", "rerank"} <= set(embed_scenario_names())
    for name in embed_scenario_names():
        sc = load_embed_scenario(name)
        assert sc.slos.e2e_ms is not None and sc.fit.rate_rps is not None
        sch = build_embed_schedule(sc)
        assert sch.settings.fitted and sch.measured and sch.task == sc.workload.task
        if sc.workload.task == "embed":
            n, words, qwords = sc.workload.embed.inputs_per_request, sc.workload.embed.chunk_words, None
        else:
            w = sc.workload.rerank
            n, words, qwords = w.passages_per_request, w.passage_words, w.query_words
        pool = set(corpus.chunks(words))
        assert all(len(r.texts) == n and set(r.texts) <= pool for r in sch.requests)
        assert all((r.query is None) if qwords is None else r.query in corpus.chunks(qwords) for r in sch.requests)
    # embed scenarios stay out of the generation catalog that bench, sweep and the dashboard list
    assert not set(embed_scenario_names()) & set(scenario_names())


def test_the_schedule_is_deterministic_per_seed_and_follows_overrides() -> None:
    sc = load_embed_scenario("embed-query")
    a, b = build_embed_schedule(sc, 3), build_embed_schedule(sc, 3)
    assert a.requests == b.requests
    assert build_embed_schedule(sc, 4).requests != a.requests
    ov = build_embed_schedule(sc, 3, Overrides(rate_rps=2.0, duration_s=5.0, warmup_s=0.0))
    assert ov.settings.duration_s == 5.0 and all(r.t_s < 5.0 for r in ov.requests)
    assert len(ov.requests) < len(a.requests)


def test_task_rules_of_the_schema() -> None:
    ok = scenario_from_dict({**BASE, "workload": {"task": "embed", "embed": {"inputs_per_request": 2,
                                                                             "chunk_words": 8}}})
    assert ok.workload.embed.inputs_per_request == 2
    with pytest.raises(ScenarioError, match="needs `task: embed`"):
        scenario_from_dict({**BASE, "workload": {"embed": {"inputs_per_request": 2, "chunk_words": 8}}})
    with pytest.raises(ScenarioError, match="no input"):
        scenario_from_dict({**BASE, "workload": {"task": "embed", "embed": {"inputs_per_request": 1, "chunk_words": 8},
                                                 "input": {"dist": "fixed", "value": 8}}})
    with pytest.raises(ScenarioError, match="takes an `embed` block"):
        scenario_from_dict({**BASE, "workload": {"task": "embed"}})
    rr = {"passages_per_request": 20, "query_words": 8, "passage_words": 64}
    assert scenario_from_dict({**BASE, "workload": {"task": "rerank", "rerank": rr}}).workload.rerank.query_words == 8
    with pytest.raises(ScenarioError, match="takes an `rerank` block.*no embed"):
        scenario_from_dict({**BASE, "workload": {"task": "rerank", "rerank": rr,
                                                 "embed": {"inputs_per_request": 1, "chunk_words": 8}}})
    with pytest.raises(ScenarioError, match="needs `task: rerank`"):
        scenario_from_dict({**BASE, "workload": {"rerank": rr}})
    closed = {**BASE, "arrival": {"process": "closed", "concurrency": 2, "think_s": 0, "requests_per_user": 3}}
    with pytest.raises(ScenarioError, match="open-loop or offline"):
        scenario_from_dict({**closed, "workload": {"task": "embed", "embed": {"inputs_per_request": 1,
                                                                              "chunk_words": 8}}})


def test_each_task_refuses_the_other_kind_of_scenario_in_one_line() -> None:
    with pytest.raises(ScenarioError, match="advisor embed --scenario embed-query"):
        build_schedule(load_embed_scenario("embed-query"))
    with pytest.raises(ScenarioError, match="is a generate scenario, not embed or rerank") as e:
        load_embed_scenario("chat")
    assert "\n" not in str(e.value)
    assert load_scenario("chat").workload.task == "generate"  # today's scenarios keep the default task
