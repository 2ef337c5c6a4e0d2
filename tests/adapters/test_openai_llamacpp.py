"""The openai adapter against llama-cpp-python's OpenAI server, serving a GGUF the tool converted itself.

This server streams one chunk per token but sends no usage at all (it ignores
`stream_options`) and has no /metrics: the adapter's own count must stand,
and token-id prompts may be refused (then text is sent, decoded by the tokenizer).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest

import adapters
from adapters.base import RequestSpec
from adapters.openai import OpenAIAdapter
from tests.servers.mock_openai import free_port

pytestmark = [pytest.mark.engines, pytest.mark.timeout(600)]
if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
    pytest.skip("llama-cpp-python[server] is not installed: pip install -e '.[llamacpp]'", allow_module_level=True)

N_OUT = 16


def test_llama_cpp_server_benchmarked_through_managed_launch(tmp_path):
    from adapters.formats import convert
    from tests.adapters.formats.models import tiny_model

    model = tiny_model()
    gguf = convert(model, "gguf", "fp32") / "model.gguf"
    port = free_port()
    cmd = (f"{sys.executable} -m llama_cpp.server --model {gguf} --host 127.0.0.1 --port {port} "
           f"--n_ctx 512 --model_alias tiny")
    adapter = adapters.create("openai", "tiny", url=f"http://127.0.0.1:{port}", launch=cmd, log_dir=str(tmp_path),
                              tokenizer=str(model), health_timeout_s=120)
    assert isinstance(adapter, OpenAIAdapter)
    info = adapter.start()
    try:
        assert info.pid and adapter.metrics_url is None

        async def go() -> list[list]:
            async def one(i: int) -> list:
                req = RequestSpec(request_id=str(i), prompt_ids=tuple(range(10 + i, 30 + i)), max_tokens=N_OUT)
                return [c async for c in adapter.stream(req)]
            try:
                return [await one(i) for i in range(3)]  # this server runs one sequence at a time
            finally:
                await adapter.aclose()
        results = asyncio.run(go())
    finally:
        adapter.close()
    for chunks in results:
        assert sum(c.n_tokens for c in chunks) == N_OUT, [c.text for c in chunks]
        assert chunks[-1].n_out_client is not None  # the tokenizer's count of the text, reported beside
    assert set(adapter.usage_modes) <= {"none", "final"} and sum(adapter.usage_modes.values()) == 3 + 2  # + warm-up
    assert adapter.short_requests == 0
    assert (tmp_path / "server.log").stat().st_size > 0
