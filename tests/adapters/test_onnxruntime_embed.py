"""onnxruntime-embed on a tiny seeded random sentence-transformers model made here: conversion, check, cache, int8,
the drift run and `advisor verify` on it, and a generation model refused in one line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from adapters import embedders
from adapters.base import AdapterError, EngineUnavailable
from adapters.embed_base import EmbedRequest

pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from tests.adapters.test_sentence_transformers_embed import tiny_st  # noqa: E402,F401 (the fixture)

pytestmark = pytest.mark.engines
TEXTS = ("the one of his", "they have this and that", "he was at one with the")


def _reference(folder: Path, texts: tuple[str, ...]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return np.asarray(SentenceTransformer(str(folder), device="cpu").encode(list(texts)), dtype=np.float64)


def test_the_conversion_is_checked_cached_and_matches_sentence_transformers(tiny_st: Path) -> None:  # noqa: F811
    from adapters.formats import st_onnx
    from advisor.embed.drift import cosines

    first = st_onnx.ensure(tiny_st, "fp32")
    again = st_onnx.ensure(tiny_st, "fp32")
    assert again.path == first.path == tiny_st / "converted" / "st-onnx-fp32"
    assert again.fresh is False and again.convert_s is None  # an unchanged source is not converted again
    m = json.loads((first.path / "manifest.json").read_text())
    assert m["inputs"][:2] == ["input_ids", "attention_mask"] and m["max_seq_length"] == 16 and m["dim"] == 32
    assert m["check"]["min_cosine"] >= st_onnx.MIN_COSINE["fp32"]
    for precision in ("fp32", "int8"):
        a = embedders.create("onnxruntime-embed", str(tiny_st), {"threads": 1, "precision": precision})
        info = a.start()
        res = asyncio.run(a.embed(EmbedRequest("r", TEXTS, return_vectors=True)))
        with pytest.raises(AdapterError, match="exceeds the model's max_seq_length 16") as e:
            asyncio.run(a.embed(EmbedRequest("long", ("the " * 30,))))
        assert e.value.kind == "refused"
        a.close()
        assert info.precision == precision and info.format == "onnx" and info.max_model_len == 16
        assert res.n_tokens == (4 + 2) + (5 + 2) + (6 + 2) and res.dim == 32 and res.n_inputs == 3
        cos = cosines(np.asarray(res.vectors), _reference(tiny_st, TEXTS))
        assert cos.min() >= (0.999 if precision == "fp32" else st_onnx.MIN_COSINE["int8"]), (precision, cos)
    import onnx

    def int8_matmuls(precision: str) -> int:
        g = onnx.load(str(tiny_st / "converted" / f"st-onnx-{precision}" / "model.onnx")).graph
        return sum(n.op_type in ("MatMulInteger", "DynamicQuantizeMatMul") for n in g.node)

    # 2 layers x 6 linear layers, less each layer's feed-forward down-projection (fed by a GELU: kept in fp32)
    assert int8_matmuls("fp32") == 0 and int8_matmuls("int8") == 2 * 5
    fp32_graph = onnx.load(str(tiny_st / "converted" / "st-onnx-fp32" / "model.onnx")).graph
    down = st_onnx.gelu_fed_matmuls(fp32_graph)
    assert len(down) == 2 and all("output/dense" in n and "attention" not in n for n in down), down
    int8_graph = onnx.load(str(tiny_st / "converted" / "st-onnx-int8" / "model.onnx")).graph
    assert {n.name for n in int8_graph.node if n.op_type == "MatMul"} >= set(down)  # still float MatMuls


def test_a_changed_int8_recipe_converts_again(tiny_st: Path, tmp_path: Path, monkeypatch) -> None:  # noqa: F811
    import shutil

    from adapters.formats import st_onnx

    copy = tmp_path / "st"
    shutil.copytree(tiny_st, copy, ignore=shutil.ignore_patterns("converted"))
    assert st_onnx.ensure(copy, "int8").fresh and not st_onnx.ensure(copy, "int8").fresh
    monkeypatch.setattr(st_onnx, "INT8_RECIPE", st_onnx.INT8_RECIPE + ", changed")
    assert st_onnx.ensure(copy, "int8").fresh  # a cache made another way is not reused
    assert not st_onnx.ensure(copy, "fp32").fresh  # the fp32 graph does not depend on the int8 recipe


def test_a_conversion_below_the_floor_is_refused_and_not_cached(tiny_st: Path, tmp_path: Path,  # noqa: F811
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from adapters.formats import st_onnx
    from adapters.formats.check import ConversionError

    copy = tmp_path / "st"
    shutil.copytree(tiny_st, copy, ignore=shutil.ignore_patterns("converted"))
    monkeypatch.setitem(st_onnx.MIN_COSINE, "fp32", 1.0 + 1e-9)  # no conversion can reach it
    with pytest.raises(ConversionError, match="below 1.*nothing was cached"):
        st_onnx.ensure(copy, "fp32")
    assert not (copy / "converted" / "st-onnx-fp32").exists()
    assert [p.name for p in (copy / "converted").iterdir()] == []  # the staged folder is gone too


def test_a_generation_model_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    a = embedders.create("onnxruntime-embed", str(tmp_path))
    with pytest.raises(EngineUnavailable, match="generation model, not an embedding model") as e:
        a.start()
    assert "\n" not in str(e.value)
    with pytest.raises(Exception, match="precision"):
        embedders.create("onnxruntime-embed", str(tmp_path), {"precision": "int4"})


def test_verify_on_an_embedding_model_prints_and_saves_the_drift(tiny_st: Path, tmp_path: Path,  # noqa: F811
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from advisor.embed import drift
    from advisor_cli.verify import verify_command

    monkeypatch.setattr(drift, "CHUNK_WORDS", 4)  # the tiny model holds 16 tokens
    monkeypatch.setattr(drift, "N_QUERIES", 12)
    monkeypatch.setattr(drift.run_drift, "__defaults__", (drift.VARIANTS, None, 0, 12, 4))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(verify_command, ["--model", str(tiny_st), "--engine", "onnxruntime-embed",
                                                 "--engine", "sentence-transformers", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output[r.output.index("{"):])
    same = doc["quality_drift"][0]  # the reference engine again: the same function, the same rankings
    assert same["engine"] == "sentence-transformers" and same["recall_overlap_min"] == 1.0
    assert same["cosine_min"] >= 0.99999 and same["n_queries"] == 12
    rows = {x["precision"]: x for x in doc["quality_drift"][1:]}
    assert set(rows) == {"fp32", "int8"} and doc["reference"] == "sentence-transformers fp32"
    # the random tiny model maps most corpus words to [UNK]: many chunks tie, so only the cosine is tight here
    assert rows["fp32"]["status"] == "ok" and rows["fp32"]["cosine_min"] >= 0.999
    assert 0 < rows["fp32"]["recall_overlap_mean"] <= 1
    assert rows["int8"]["status"] == "ok" and 0 < rows["int8"]["cosine_mean"] <= 1 + 1e-9
    assert len(list((tmp_path / "runs-embed" / "verify").glob("*.json"))) == 1


def test_verify_says_in_one_line_when_the_corpus_chunks_do_not_fit_the_model(tiny_st: Path, tmp_path: Path,  # noqa: F811
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from advisor_cli.verify import verify_command

    monkeypatch.chdir(tmp_path)  # the default 64-word chunks are past the tiny model's 16 tokens
    r = CliRunner().invoke(verify_command, ["--model", str(tiny_st), "--engine", "onnxruntime-embed"])
    assert r.exit_code == 2 and "exceeds the model's max_seq_length 16" in r.output
    assert "Traceback" not in r.output and not (tmp_path / "runs-embed").exists()


def test_openvino_runs_the_same_graphs(tiny_st: Path) -> None:  # noqa: F811
    pytest.importorskip("openvino")
    from adapters.formats import st_onnx
    from advisor.embed.drift import cosines

    ref = _reference(tiny_st, TEXTS)
    for precision in ("fp32", "int8"):
        a = embedders.create("openvino-embed", str(tiny_st), {"threads": 1, "precision": precision})
        info = a.start()
        res = asyncio.run(a.embed(EmbedRequest("r", TEXTS, return_vectors=True)))
        with pytest.raises(AdapterError, match="exceeds the model's max_seq_length 16"):
            asyncio.run(a.embed(EmbedRequest("long", ("the " * 30,))))
        a.close()
        assert info.engine == "OpenVINO" and info.precision == precision and info.adapter == "openvino-embed"
        assert res.n_tokens == (4 + 2) + (5 + 2) + (6 + 2) and res.dim == 32
        cos = cosines(np.asarray(res.vectors), ref)
        assert cos.min() >= (0.999 if precision == "fp32" else st_onnx.MIN_COSINE["int8"]), (precision, cos)


def test_a_changed_pooling_mode_converts_again(tiny_st: Path, tmp_path: Path) -> None:  # noqa: F811
    import shutil

    from adapters.formats import st_onnx

    copy = tmp_path / "st"
    shutil.copytree(tiny_st, copy, ignore=shutil.ignore_patterns("converted"))
    assert st_onnx.ensure(copy, "fp32").fresh and not st_onnx.ensure(copy, "fp32").fresh
    pooling = next(copy.glob("*_Pooling/config.json"))
    cfg = json.loads(pooling.read_text())
    cfg.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(cfg))
    again = st_onnx.ensure(copy, "fp32")  # CLS pooling now: a new graph, checked against the new stack
    assert again.fresh and again.manifest["check"]["min_cosine"] >= st_onnx.MIN_COSINE["fp32"]
