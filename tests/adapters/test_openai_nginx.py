"""The openai adapter against the real nginx zero-work SSE server (shared/bench/zero-sse).

Each test run starts its own nginx on free loopback ports with a private prefix,
so it never collides with a benchmark using the shared one. Skipped without nginx.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from adapters.base import RequestSpec
from adapters.launch import http_ok
from adapters.openai import OpenAIAdapter, OpenAIOptions
from tests.adapters.formats.models import tiny_model
from tests.servers.mock_openai import free_port

pytestmark = pytest.mark.slow
ZERO_SSE = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "zero-sse"


@pytest.fixture(scope="module")
def nginx():
    if shutil.which("nginx") is None:
        pytest.skip("nginx is not installed (apt-get install -y nginx)")
    if not (ZERO_SSE / "nginx.conf").is_file():
        pytest.skip(f"zero-sse server files not found at {ZERO_SSE}")
    prefix = Path(tempfile.mkdtemp(prefix="advisor-zero-sse-"))  # not pytest's tmp: nginx workers run as nobody
    prefix.chmod(0o755)
    (prefix / "nginx-body").mkdir()
    subprocess.run([sys.executable, str(ZERO_SSE / "make_bodies.py"), str(prefix / "www")], check=True)
    p16, p64 = free_port(), free_port()
    conf = (ZERO_SSE / "nginx.conf").read_text().replace("/tmp/zero-sse", str(prefix))
    conf = conf.replace("127.0.0.1:18080", f"127.0.0.1:{p16}").replace("127.0.0.1:18064", f"127.0.0.1:{p64}")
    conf = conf.replace("worker_cpu_affinity 10;", "")  # don't pin: this is a correctness test
    (prefix / "nginx.conf").write_text(conf)
    subprocess.run(["nginx", "-p", str(prefix), "-c", str(prefix / "nginx.conf")], check=True)
    try:
        deadline = time.monotonic() + 10
        while not http_ok(f"http://127.0.0.1:{p16}/health") and time.monotonic() < deadline:
            time.sleep(0.1)
        yield {16: f"http://127.0.0.1:{p16}/v1", 64: f"http://127.0.0.1:{p64}/v1"}
    finally:
        pid = int((prefix / "nginx.pid").read_text())
        subprocess.run(["kill", str(pid)], check=False)
        shutil.rmtree(prefix, ignore_errors=True)


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
@pytest.mark.parametrize("n_chunks", [16, 64])
def test_streams_every_chunk_with_final_usage(nginx, endpoint, n_chunks):
    adapter = OpenAIAdapter("tiny-llama", OpenAIOptions(url=nginx[n_chunks], endpoint=endpoint,
                                                        tokenizer=str(tiny_model())))
    info = adapter.start()  # its warm-up requests count too: compare what the 100 below add
    assert info.max_model_len == 2048
    modes_before, short_before = dict(adapter.usage_modes), adapter.short_requests  # warm-ups: the fixed bodies outrun them

    async def go() -> list[list[int]]:
        async def one(i: int) -> list[int]:
            req = RequestSpec(request_id=str(i), prompt_ids=(1,) * 16, max_tokens=n_chunks, prompt_text="x " * 16)
            return [c.n_tokens async for c in adapter.stream(req)]
        try:
            return await asyncio.gather(*[one(i) for i in range(100)])
        finally:
            await adapter.aclose()
    results = asyncio.run(go())
    assert all(r == [1] * n_chunks for r in results)
    added = {k: n - modes_before.get(k, 0) for k, n in adapter.usage_modes.items()}
    assert added == {"final": 100} and adapter.short_requests == short_before


def test_two_thousand_concurrent_streams_all_complete(nginx):
    adapter = OpenAIAdapter("tiny-llama", OpenAIOptions(url=nginx[16]))
    adapter.start()

    async def go() -> list[int]:
        async def one(i: int) -> int:
            req = RequestSpec(request_id=str(i), prompt_ids=(1,) * 16, max_tokens=16)
            return sum([c.n_tokens async for c in adapter.stream(req)])
        try:
            return await asyncio.gather(*[one(i) for i in range(2000)])
        finally:
            await adapter.aclose()
    assert asyncio.run(go()) == [16] * 2000
