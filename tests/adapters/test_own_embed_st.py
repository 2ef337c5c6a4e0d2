"""own-embed against sentence-transformers on the same folders (the embed group: needs sentence-transformers): a
tiny random BERT built by sentence-transformers, one written by hand, and the real all-MiniLM-L6-v2; cosine at
least 0.9999 per input and the same token counts. Then `advisor embed --engine own-embed` on MiniLM."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from adapters import embedders
from adapters.embed_base import EmbedRequest
from scenarios.corpus import chunks

pytest.importorskip("sentence_transformers")

from tests.adapters.test_sentence_transformers_embed import tiny_st  # noqa: E402,F401 (the fixture)
from tests.own_engine.model.tiny_bert import make_tiny_bert  # noqa: E402
from tests.realmodel.test_minilm import minilm, minilm_wheel  # noqa: E402,F401 (the fixtures)

pytestmark = pytest.mark.engines
ROOT = Path(__file__).resolve().parents[2]
MIN_COSINE = 0.9999
TEXTS = ("the one of his", "they have this and that", "he was at one with the", "they")


def _both(folder: Path, texts: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, int, int]:
    """own-embed's vectors, sentence-transformers' vectors, and each engine's token count."""
    from sentence_transformers import SentenceTransformer

    a = embedders.create("own-embed", str(folder), {"threads": 2})
    a.start()
    res = asyncio.run(a.embed(EmbedRequest("r", texts, return_vectors=True)))
    a.close()
    st = SentenceTransformer(str(folder), device="cpu")
    ref = st.encode(list(texts), batch_size=len(texts), convert_to_numpy=True).astype(np.float64)
    n_st = int(st.tokenize(list(texts))["attention_mask"].sum())
    return np.asarray(res.vectors), ref, res.n_tokens, n_st


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_own_embed_matches_sentence_transformers_on_a_random_bert(tiny_st: Path) -> None:  # noqa: F811
    got, ref, n_own, n_st = _both(tiny_st, TEXTS)
    assert _cosines(got, ref).min() >= MIN_COSINE and n_own == n_st


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_own_embed_matches_sentence_transformers_on_the_hand_written_folder(tmp_path: Path, pooling: str) -> None:
    folder = make_tiny_bert(tmp_path / "bert", seed=3, pooling=pooling, normalize=pooling != "max")
    got, ref, n_own, n_st = _both(folder, TEXTS)
    assert _cosines(got, ref).min() >= MIN_COSINE and n_own == n_st
    assert np.allclose(got, ref, atol=1e-5)  # not only the direction: the norm too (max: unnormalised)


def test_own_embed_matches_sentence_transformers_on_minilm(minilm: Path) -> None:  # noqa: F811
    texts = tuple(chunks(128)[:16]) + tuple(chunks(12)[:15]) + ("Numbers 12, 345 and 6.78; mixed CASE words!",)
    got, ref, n_own, n_st = _both(minilm, texts)
    cos = _cosines(got, ref)
    assert cos.min() >= MIN_COSINE, cos.min()
    assert n_own == n_st and got.shape == (32, 384)


def test_advisor_embed_runs_own_embed_on_minilm(minilm: Path, tmp_path: Path) -> None:  # noqa: F811
    env = {**os.environ, "ADVISOR_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "advisor_cli", "embed", "--scenario", "embed-query", "--engine",
                        "own-embed", "--model", str(minilm), "--threads", "1", "--rate", "10", "--duration", "2",
                        "--warmup", "0", "--max-requests", "20", "--json"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout[p.stdout.index("{"):])
    assert doc["engine"]["adapter"] == "own-embed" and doc["engine"]["max_model_len"] == 256
    assert doc["summary"]["n_ok"] == doc["summary"]["n_requests"] > 0


def test_verify_prints_own_embeds_drift(tiny_st: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from click.testing import CliRunner

    from advisor.embed import drift
    from advisor_cli.verify import verify_command

    monkeypatch.setattr(drift, "CHUNK_WORDS", 4)  # the tiny model holds 16 tokens
    monkeypatch.setattr(drift.run_drift, "__defaults__", (drift.VARIANTS, None, 0, 12, 4))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(verify_command, ["--model", str(tiny_st), "--engine", "own-embed", "--json"])
    assert r.exit_code == 0, r.output
    [row] = json.loads(r.output[r.output.index("{"):])["quality_drift"]
    assert row["engine"] == "own-embed" and row["precision"] == "fp32" and row["status"] == "ok"
    assert row["cosine_min"] >= MIN_COSINE and row["n_queries"] == 12
