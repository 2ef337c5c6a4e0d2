"""Padding waste: hand-computed from batches of known lengths, through the metrics and through each in-process engine
(the engine tests need sentence-transformers: the embed test group runs them)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from adapters import embedders
from adapters.base import EngineUnavailable
from advisor.embed.drive import EmbedRecord
from advisor.embed.metrics import padding, summarise
from tests.advisor.embed.test_metrics import MS, _schedule

HAS_ST = importlib.util.find_spec("sentence_transformers") is not None
if HAS_ST:
    from tests.adapters.test_sentence_transformers_embed import tiny_ce, tiny_st  # noqa: F401 (the fixtures)

# the tiny model's tokenizer: one token per word, plus [CLS] and [SEP]; three inputs of 4, 5 and 1 words
TEXTS = ("the one of his", "they have this and that", "he")
REAL = (4 + 2) + (5 + 2) + (1 + 2)  # 16 tokens
PADDED = 3 * (5 + 2)  # every row padded to the longest, 7 tokens: 21


def _record(i: int, real: int | None, padded: int | None, ok: bool = True) -> EmbedRecord:
    t = i * 100 * MS + 1_000 * MS
    return EmbedRecord(i, False, 3, t, t, t + 10 * MS, real, 32, None if ok else "engine", None if ok else "x",
                       n_tokens_padded=padded)


def test_the_waste_is_the_padded_tokens_less_the_real_over_the_padded() -> None:
    assert _record(0, REAL, PADDED).padding_waste == pytest.approx(5 / 21)
    assert _record(0, 6, 6).padding_waste == 0.0  # a batch the engine ran without padding (one input)
    assert _record(0, REAL, None).padding_waste is None  # the engine did not say: not known, never 0
    assert _record(0, None, PADDED).padding_waste is None
    assert _record(0, REAL, PADDED, ok=False).padding_waste is None
    assert _record(0, 30, 21).padding_waste is None  # fewer padded than real tokens is no count to compute with


def test_the_run_figure_sums_the_tokens_and_an_unknown_request_makes_it_unknown() -> None:
    a, b = _record(0, REAL, PADDED), _record(1, 40, 60)
    dist, run = padding([a, b], [a, b])
    assert run == pytest.approx((21 - 16 + 60 - 40) / (21 + 60))  # summed tokens, not the mean of the two shares
    assert dist.n == 2 and dist.min == pytest.approx(5 / 21) and dist.max == pytest.approx(1 / 3)
    assert dist.p50 == pytest.approx((5 / 21 + 1 / 3) / 2)
    c = _record(2, 40, None)
    dist, run = padding([a, b, c], [a, b, c])
    assert dist.n == 0 and run is None


def test_the_summary_carries_it_over_the_windows_requests() -> None:
    sch = _schedule(rate=10.0, duration=3.0, warmup=0.5)
    recs = []
    for i, r in enumerate(sch.requests):
        t = int(r.t_s * 1e9)
        real, padded = (REAL, PADDED) if i % 2 else (40, 40)
        recs.append(EmbedRecord(i, r.warmup, 4, t, t, t + 5 * MS, real, 32, n_tokens_padded=padded))
    s = summarise(sch, recs)
    inside = [r for r in recs if not r.warmup and 0.5e9 <= r.t_done_ns <= 3.5e9]
    want = sum(r.n_tokens_padded - r.n_tokens for r in inside) / sum(r.n_tokens_padded for r in inside)
    assert s.padding_waste_run == pytest.approx(want) and 0 < want < 5 / 21
    assert s.padding_waste.n == sum(1 for r in recs if not r.warmup)
    assert s.to_dict()["padding_waste"]["n"] == s.padding_waste.n
    from dataclasses import replace

    unknown = summarise(sch, [replace(r, n_tokens_padded=None) for r in recs])  # a server: it does not say
    assert unknown.padding_waste.n == 0 and unknown.padding_waste_run is None


def _embed(engine: str, folder: Path, texts: tuple[str, ...], query: str | None = None, **opts: object):
    from adapters import embedders
    from adapters.embed_base import EmbedRequest

    a = embedders.create(engine, str(folder), {"threads": 1, **opts})
    a.start()
    try:
        return asyncio.run(a.embed(EmbedRequest("r", texts, query=query)))
    finally:
        a.close()


# the in-process engines (every one an engine helper adds as well): each runs its texts as one padded batch, so each
# says rows x its longest; an engine that packs its inputs instead, unpadded, belongs in PACKS (it says None)
IN_PROCESS = [n for n in embedders.EMBED_REGISTRY if not embedders.adapter_class(n).served]
PACKS: set[str] = set()
PAIRS = [2 + n + 3 for n in (4, 5, 1)]  # rerank: [CLS] query [SEP] passage [SEP], "which one" with each passage
EXACT = {"embed": (REAL, PADDED), "rerank": (sum(PAIRS), 3 * max(PAIRS))}  # 16 of 21; 25 of 30


@pytest.mark.skipif(not HAS_ST, reason="needs sentence-transformers (the embed test group)")
@pytest.mark.parametrize("engine", [n if n.startswith("sentence-transformers") else pytest.param(n, marks=pytest.mark.engines)
                                    for n in IN_PROCESS])
def test_every_in_process_engine_says_its_padded_batch(engine: str, request: pytest.FixtureRequest) -> None:
    if (why := embedders.why_unavailable(engine)) is not None:
        pytest.skip(why)
    task = embedders.adapter_class(engine).tasks[0]
    folder = request.getfixturevalue("tiny_ce" if task == "rerank" else "tiny_st")
    try:
        res = _embed(engine, folder, TEXTS, query="which one" if task == "rerank" else None)
    except EngineUnavailable as e:
        pytest.skip(f"{engine} does not run the tiny test model: {e}")
    if engine in PACKS:
        assert res.n_tokens_padded is None
        return
    assert res.n_tokens_padded is not None and res.n_tokens_padded % len(TEXTS) == 0  # a (rows, length) batch
    if engine in ("sentence-transformers", "sentence-transformers-rerank", "onnxruntime-embed", "openvino-embed",
                  "own-embed"):
        assert (res.n_tokens, res.n_tokens_padded) == EXACT[task]  # padded to the longest, computed by hand
    else:
        assert res.n_tokens_padded >= res.n_tokens


@pytest.mark.skipif(not HAS_ST, reason="needs sentence-transformers (the embed test group)")
def test_a_batch_of_one_input_is_not_padded(tiny_st: Path) -> None:  # noqa: F811
    one = _embed("sentence-transformers", tiny_st, TEXTS[:1])
    assert one.n_tokens == one.n_tokens_padded == 6
