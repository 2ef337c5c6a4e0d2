"""own-embed (own_engine's encoder) on a tiny random BERT folder written here without sentence-transformers: vectors,
token counts, refusals, and `advisor embed --engine own-embed` end to end."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from adapters import embedders
from adapters.base import AdapterError, EngineUnavailable
from adapters.embed_base import EmbedRequest
from tests.own_engine.model.tiny_bert import make_tiny_bert, reference_vector

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ("the one of his", "they have this and that", "he was at one with the")


def test_vectors_and_token_counts_are_the_models(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    folder = make_tiny_bert(tmp_path / "bert")  # its tokenizer.json truncates at 8: the engine must not
    a = embedders.create("own-embed", str(folder), {"threads": 1})
    info = a.start()
    res = asyncio.run(a.embed(EmbedRequest("r", TEXTS + ("the " * 10,), return_vectors=True)))
    with pytest.raises(AdapterError, match="an input of 32 tokens exceeds the model's max_seq_length 16") as e:
        asyncio.run(a.embed(EmbedRequest("long", ("the " * 30,))))
    assert e.value.kind == "refused"
    with pytest.raises(AdapterError, match="does not rerank"):
        asyncio.run(a.embed(EmbedRequest("q", TEXTS, query="the")))
    a.close()
    assert info.adapter == "own-embed" and info.max_model_len == 16 and info.batching == "none"
    assert info.extra["task"] == "embed" and info.extra["pooling"] == "mean" and info.extra["normalize"] is True
    assert res.n_tokens == (4 + 2) + (5 + 2) + (6 + 2) + (10 + 2) and res.dim == 32 and res.n_inputs == 4
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_truncation()
    for vec, text in zip(res.vectors, TEXTS + ("the " * 10,)):
        want = reference_vector(folder, tok.encode(text).ids)
        assert torch.nn.functional.cosine_similarity(torch.tensor(vec), want, dim=0) >= 0.9999


def test_a_generation_model_or_another_device_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    with pytest.raises(EngineUnavailable, match="generation model, not an embedding model") as e:
        embedders.create("own-embed", str(tmp_path)).start()
    assert "\n" not in str(e.value)
    with pytest.raises(EngineUnavailable, match="CPU only, not cuda"):
        embedders.create("own-embed", str(tmp_path), {"device": "cuda"}).start()
    with pytest.raises(EngineUnavailable, match="needs an embedding model: give --model"):
        embedders.create("own-embed", None).start()
    with pytest.raises(Exception, match="linear_kernels"):
        embedders.create("own-embed", str(tmp_path), {"linear_kernels": "cublas"})


def test_a_folder_it_cannot_run_is_refused_at_start(tmp_path: Path) -> None:
    folder = make_tiny_bert(tmp_path / "bert")
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "model_type": "roberta"}))
    with pytest.raises(EngineUnavailable, match="own-embed: .*model_type 'roberta'") as e:
        embedders.create("own-embed", str(folder)).start()
    assert "\n" not in str(e.value)


def test_advisor_embed_runs_own_embed_end_to_end(tmp_path: Path) -> None:
    folder = make_tiny_bert(tmp_path / "bert", max_seq_length=64)  # embed-query's 12-word chunks fit
    env = {**os.environ, "ADVISOR_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "advisor_cli", "embed", "--scenario", "embed-query", "--engine", "own-embed",
                        "--model", str(folder), "--threads", "1", "--rate", "10", "--duration", "2", "--warmup", "0",
                        "--max-requests", "20"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "latency ms p50" in p.stdout and "tokens/s" in p.stdout
    [result] = list((tmp_path / "runs-embed").glob("*/result.json"))
    doc = json.loads(result.read_text())
    assert doc["scenario"] == "embed-query" and doc["summary"]["n_ok"] == doc["summary"]["n_requests"] > 0
    assert doc["engine"]["adapter"] == "own-embed" and doc["engine"]["extra"]["linear_kernels"]
