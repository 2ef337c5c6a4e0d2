"""onnxruntime-rerank and openvino-rerank on the tiny seeded random cross-encoder made here: conversion, check, cache,
int8, the rerank drift of `advisor verify` on it, and the wrong models refused in one line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from adapters import embedders
from adapters.base import AdapterError, EngineUnavailable
from adapters.embed_base import EmbedRequest

pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from tests.adapters.test_sentence_transformers_embed import tiny_ce, tiny_st  # noqa: E402,F401 (the fixtures)

pytestmark = pytest.mark.engines
QUERY, PASSAGES = "the one of his", ("they have this", "he was at one", "for the", "with that a")


def _reference(folder: Path) -> list[float]:
    import torch
    from sentence_transformers import CrossEncoder

    m = CrossEncoder(str(folder), device="cpu")
    return [float(x) for x in m.predict([(QUERY, p) for p in PASSAGES], activation_fn=torch.nn.Sigmoid())]


@pytest.mark.parametrize("engine", ["onnxruntime-rerank", "openvino-rerank"])
def test_scores_match_the_cross_encoder_and_the_conversion_is_cached(tiny_ce: Path, engine: str) -> None:  # noqa: F811
    from adapters.formats import ce_onnx

    if engine == "openvino-rerank":
        pytest.importorskip("openvino")
    want = _reference(tiny_ce)
    for precision in ("fp32", "int8"):
        a = embedders.create(engine, str(tiny_ce), {"threads": 1, "precision": precision})
        info = a.start()
        res = asyncio.run(a.embed(EmbedRequest("r", PASSAGES, return_vectors=True, query=QUERY)))
        with pytest.raises(AdapterError, match="exceeds the model's max_length 64") as e:
            asyncio.run(a.embed(EmbedRequest("long", ("the " * 70,), query=QUERY)))
        assert e.value.kind == "refused"
        with pytest.raises(AdapterError, match="it does not embed"):
            asyncio.run(a.embed(EmbedRequest("embed", PASSAGES)))
        a.close()
        assert info.adapter == engine and info.precision == precision and info.extra["task"] == "rerank"
        # each pair: [CLS] query [SEP] passage [SEP]; the batch is padded to the longest pair (4 words + 3)
        assert res.n_tokens == 4 * (4 + 2) + (3 + 4 + 2 + 3) + 4 and res.dim == 1 and res.n_inputs == 4
        assert res.n_tokens_padded == 4 * (4 + 4 + 3)
        bound = 1e-5 if precision == "fp32" else ce_onnx.MAX_SCORE_DIFF["int8"]
        assert max(abs(g - w) for g, w in zip(res.scores, want)) <= bound, (precision, res.scores, want)
    m = json.loads((ce_onnx.converted_dir(tiny_ce, "fp32") / "manifest.json").read_text())
    assert m["format"] == "ce-onnx" and m["max_seq_length"] == 64 and m["inputs"][:2] == ["input_ids", "attention_mask"]
    assert m["check"]["max_abs_score_diff"] <= ce_onnx.MAX_SCORE_DIFF["fp32"]
    again = ce_onnx.ensure(tiny_ce, "int8")
    assert again.fresh is False and again.convert_s is None  # an unchanged source is not converted again


def test_a_conversion_past_the_bound_is_refused_and_not_cached(tiny_ce: Path, tmp_path: Path,  # noqa: F811
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from adapters.formats import ce_onnx
    from adapters.formats.check import ConversionError

    copy = tmp_path / "ce"
    shutil.copytree(tiny_ce, copy, ignore=shutil.ignore_patterns("converted"))
    monkeypatch.setitem(ce_onnx.MAX_SCORE_DIFF, "fp32", -1.0)  # no conversion can meet it
    with pytest.raises(ConversionError, match="more than -1.0.*nothing was cached"):
        ce_onnx.ensure(copy, "fp32")
    assert [p.name for p in (copy / "converted").iterdir()] == []


@pytest.mark.parametrize("engine", ["onnxruntime-rerank", "openvino-rerank"])
def test_a_generation_or_embedding_model_is_refused_in_one_line(tiny_st: Path, tmp_path: Path,  # noqa: F811
                                                                engine: str) -> None:
    if engine == "openvino-rerank":
        pytest.importorskip("openvino")
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    for model, what in ((tmp_path, "a generation model"), (tiny_st, "an embedding model")):
        a = embedders.create(engine, str(model))
        with pytest.raises(EngineUnavailable, match=f"is {what}.*, not a cross-encoder") as e:
            a.start()
        assert "\n" not in str(e.value)
        assert not (Path(model) / "converted" / "ce-onnx-fp32").exists()  # refused before converting


def test_verify_on_a_cross_encoder_reports_the_int8_drift(tiny_ce: Path, tmp_path: Path,  # noqa: F811
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from advisor.embed import rerank_drift
    from advisor_cli.verify import verify_command

    monkeypatch.setattr(rerank_drift, "PASSAGE_WORDS", 8)  # the tiny model holds 64 tokens
    monkeypatch.setattr(rerank_drift, "N_QUERIES", 6)
    monkeypatch.setattr(rerank_drift, "CANDIDATES", 12)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(verify_command, ["--model", str(tiny_ce), "--threads", "1", "--engine", "onnxruntime-rerank",
                                            "--engine", "sentence-transformers-rerank", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output[r.output.index("{"):])
    assert doc["task"] == "rerank" and doc["reference"] == "sentence-transformers-rerank fp32" and doc["k"] == 10
    same = doc["quality_drift"][0]  # the reference engine again: the same scores
    assert same["engine"] == "sentence-transformers-rerank" and same["score_max_abs_diff"] == 0.0
    assert same["topk_overlap_min"] == 1.0 and same["kendall_tau_min"] == 1.0 and same["n_queries"] == 6
    rows = {x["precision"]: x for x in doc["quality_drift"][1:]}
    assert set(rows) == {"fp32", "int8"} and all(x["status"] == "ok" for x in rows.values())
    assert rows["fp32"]["score_max_abs_diff"] <= 1e-5 and rows["fp32"]["topk_overlap_min"] == 1.0
    # the random model's scores sit within about 1e-3 of 0.5: float rounding alone can swap near-ties in fp32
    assert rows["fp32"]["kendall_tau_min"] > 0.95
    # int8 drift is reported, not hidden: its scores and order move measurably more than fp32's
    assert rows["int8"]["score_max_abs_diff"] > 10 * rows["fp32"]["score_max_abs_diff"]
    assert rows["int8"]["kendall_tau_mean"] < rows["fp32"]["kendall_tau_mean"]
    assert len(list((tmp_path / "runs-embed" / "verify").glob("*.json"))) == 1
    r = CliRunner().invoke(verify_command, ["--model", str(tiny_ce), "--engine", "onnxruntime-rerank"])
    assert r.exit_code == 0 and "top10 mean" in r.output and "Kendall's tau-b" in r.output


def test_verify_refuses_in_one_line_before_measuring(tiny_ce: Path, tmp_path: Path) -> None:  # noqa: F811
    from click.testing import CliRunner

    from advisor_cli.verify import verify_command

    monkeypatch_dir = tmp_path / "cwd"
    monkeypatch_dir.mkdir()
    r = CliRunner().invoke(verify_command, ["--model", str(tiny_ce), "--engine", "onnxruntime-embed"])
    assert r.exit_code == 2 and "is a cross-encoder: choose from onnxruntime-rerank" in r.output
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(monkeypatch_dir)  # the default 96-word passages are past the tiny model's 64 tokens
        r = CliRunner().invoke(verify_command, ["--model", str(tiny_ce), "--engine", "onnxruntime-rerank"])
    assert r.exit_code == 2 and "exceeds the model's max_length 64" in r.output and "Traceback" not in r.output
    assert not (monkeypatch_dir / "runs-embed").exists()
