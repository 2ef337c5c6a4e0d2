"""vLLM for real (CPU build in CI): the in-process adapter and vLLM's own OpenAI server.

Run with `scripts/test_vllm.sh` (its own venv with vllm-cpu). Each engine start
takes ~30-60 s on 2 cores, so the in-process engine is started once per module.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(900)]
pytest.importorskip("vllm", reason="vLLM is not installed: run scripts/test_vllm.sh")

from adapters.base import Chunk, RequestSpec  # noqa: E402
from tests.servers.mock_openai import free_port  # noqa: E402

N_OUT = 24


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from model_cache.create import create_model

    return create_model("tiny-vllm", "tiny", seed=3, root=tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def engine(model_dir: Path):
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import adapters

    adapter = adapters.create("vllm", str(model_dir), dtype="float32", max_model_len=512, kv_cache_space_gb=1)
    info = adapter.start()
    yield adapter, info
    adapter.close()


def _greedy_reference(model_dir: Path, prompt: list[int], n: int) -> list[int]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    out = model.generate(torch.tensor([prompt]), max_new_tokens=n, min_new_tokens=n, do_sample=False)
    return out[0, len(prompt):].tolist()


def _collect(adapter, reqs: list[RequestSpec], t_send_ns: dict[str, int] | None = None) -> list[list[Chunk]]:
    async def one(r: RequestSpec) -> list[Chunk]:
        if t_send_ns is not None:
            t_send_ns[r.request_id] = time.perf_counter_ns()
        return [c async for c in adapter.stream(r)]

    async def all_() -> list[list[Chunk]]:
        return await asyncio.gather(*[one(r) for r in reqs])
    return asyncio.run(all_())


def test_in_process_greedy_matches_transformers_with_exact_length(engine, model_dir):
    adapter, info = engine
    assert info.engine == "vLLM" and info.batching == "continuous" and info.vocab_size == 2048
    prompts = [[5, 17, 99, 300, 42, 7], list(range(10, 40))]
    reqs = [RequestSpec(request_id=f"g{i}", prompt_ids=tuple(p), max_tokens=N_OUT) for i, p in enumerate(prompts)]
    results = _collect(adapter, reqs)
    for p, chunks in zip(prompts, results, strict=True):
        assert sum(c.n_tokens for c in chunks) == N_OUT and chunks[-1].n_out_total == N_OUT
        assert chunks[-1].n_prompt == len(p)
        assert all(a.t_ns <= b.t_ns for a, b in zip(chunks, chunks[1:], strict=False))
    ids = _token_ids(adapter, prompts[0])
    assert ids == _greedy_reference(model_dir, prompts[0], N_OUT)
    t = adapter.engine_timings["g0"]
    assert t["first_token_ns"] <= t["last_token_ns"]


def _token_ids(adapter, prompt: list[int]) -> list[int]:
    """Greedy ids straight from the engine (the adapter's chunks carry counts and text, not ids)."""
    from vllm import SamplingParams

    async def run() -> list[int]:
        ids: list[int] = []
        sp = SamplingParams(max_tokens=N_OUT, min_tokens=N_OUT, ignore_eos=True, temperature=0.0)
        async for out in adapter._llm.generate({"prompt_token_ids": prompt}, sp, "ids-check"):
            ids = list(out.outputs[0].token_ids)
        return ids
    return asyncio.run_coroutine_threadsafe(run(), adapter._loop).result(timeout=120)


def test_concurrent_requests_are_batched_and_stats_reported(engine):
    adapter, _ = engine
    reqs = [RequestSpec(request_id=f"c{i}", prompt_ids=tuple(range(3, 3 + 8 + i)), max_tokens=16) for i in range(6)]
    results = _collect(adapter, reqs)
    assert [sum(c.n_tokens for c in ch) for ch in results] == [16] * 6
    stats = adapter.stats()
    assert {"running", "waiting", "kv_cache_usage"} <= set(stats)


def test_too_long_prompt_is_refused_and_engine_goes_on(engine):
    from adapters.base import AdapterError

    adapter, _ = engine
    with pytest.raises(AdapterError) as info:
        _collect(adapter, [RequestSpec(request_id="long", prompt_ids=(1,) * 600, max_tokens=4)])
    assert info.value.kind == "refused", str(info.value)
    ok = _collect(adapter, [RequestSpec(request_id="after", prompt_ids=(1, 2, 3), max_tokens=4)])
    assert sum(c.n_tokens for c in ok[0]) == 4


def test_vllm_openai_server_via_managed_launch(model_dir, tmp_path):
    """vLLM's own server, started by the openai adapter, benchmarked, checked against usage and /metrics."""
    pytest.importorskip("prometheus_client")
    import adapters
    from advisor.telemetry.prometheus import PrometheusSampler, histogram_mean

    port = free_port()
    cmd = (f"VLLM_CPU_KVCACHE_SPACE=1 {sys.executable} -m vllm.entrypoints.openai.api_server --model {model_dir} "
           f"--served-model-name tiny --host 127.0.0.1 --port {port} --max-model-len 512 --dtype float32")
    adapter = adapters.create("openai", "tiny", url=f"http://127.0.0.1:{port}/v1", launch=cmd, log_dir=str(tmp_path),
                              tokenizer=str(model_dir), health_timeout_s=400)
    info = adapter.start()
    try:
        assert info.engine == "vLLM" and info.pid and adapter.metrics_url
        prom = PrometheusSampler(adapter.metrics_url)
        prom.sample()
        reqs = [RequestSpec(request_id=f"s{i}", prompt_ids=tuple(range(20 + i, 36 + i)), max_tokens=N_OUT)
                for i in range(4)]
        t_send: dict[str, int] = {}
        results = _collect(adapter, reqs, t_send)
        prom.sample()
    finally:
        adapter.close()
    for chunks in results:
        assert sum(c.n_tokens for c in chunks) == N_OUT == chunks[-1].n_out_total
        assert chunks[-1].n_prompt == 16
    assert adapter.usage_modes == {"per_chunk": 4 + 2} and adapter.short_requests == 0  # + the warm-up requests
    assert {c.token_source for ch in results for c in ch} == {"server_per_chunk"}
    delta = prom.snapshots()["delta"]
    assert delta["vllm:generation_tokens_total"] == 4 * N_OUT
    assert delta["vllm:prompt_tokens_total"] == 4 * 16
    assert delta["vllm:request_generation_tokens_count"] == 4
    # the server times each request inside the client's own window, so its means cannot exceed ours
    snap = prom.snapshots()
    server_ttft_s = histogram_mean(snap, "vllm:time_to_first_token_seconds")
    server_e2e_s = histogram_mean(snap, "vllm:e2e_request_latency_seconds")
    sent = [t_send[r.request_id] for r in reqs]
    client_ttft_s = sum(ch[0].t_ns - t for ch, t in zip(results, sent, strict=True)) / 4 / 1e9
    client_e2e_s = sum(ch[-1].t_ns - t for ch, t in zip(results, sent, strict=True)) / 4 / 1e9
    assert server_ttft_s is not None and 0 < server_ttft_s <= client_ttft_s
    assert server_e2e_s is not None and server_ttft_s < server_e2e_s <= client_e2e_s
    assert "api_server" in (tmp_path / "server.log").read_text()
