"""A small OpenAI-compatible mock server for adapter tests (loopback only, in a thread).

It streams one token per SSE event, reports usage per chunk, at the end only,
or not at all, and misbehaves on demand (`server.mode`): HTTP 429/500/400,
a dropped connection mid-stream, malformed JSON, no `[DONE]`, a slow first
byte, no tokens, rejecting token-id prompts or the `ignore_eos` extension,
ignoring `ignore_eos`, and events split into tiny TCP writes with CRLF line
ends and comments. It also serves a vLLM-style Prometheus `/metrics`.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

from aiohttp import web

MODES = ("ok", "429", "500", "400", "drop", "malformed", "no_done", "slow", "no_tokens", "reject_ids",
         "reject_extras", "stop_early", "split", "error_event", "too_long", "json_body", "strict_stream_options",
         "die")  # die: the process exits on its first generation request (a launched server's OOM); never in-process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MockOpenAIServer:
    """`with MockOpenAIServer() as srv:` serves on `srv.url`; set `srv.mode` / `srv.usage` between requests."""

    def __init__(self, *, mode: str = "ok", usage: str = "per_chunk", model: str = "mock-model",
                 slow_s: float = 2.0, owned_by: str = "mock") -> None:
        assert mode in MODES and usage in ("per_chunk", "final", "none")
        self.mode, self.usage, self.model, self.slow_s, self.owned_by = mode, usage, model, slow_s, owned_by
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.requests: list[dict[str, Any]] = []  # {"path", "body", "headers"} per generation request
        self.running = 0
        self.generated_tokens = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    # ---- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> MockOpenAIServer:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._start())
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup() if self._runner else asyncio.sleep(0))
            self._loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        assert ready.wait(10), "mock server did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/version", self._version)
        app.router.add_get("/health", self._health)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_post("/v1/completions", self._generate)
        app.router.add_post("/v1/chat/completions", self._generate)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    # ---- handlers --------------------------------------------------------------------------
    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": self.model, "object": "model", "owned_by": self.owned_by, "max_model_len": 2048}]})

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": "9.9.9"})

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _metrics(self, request: web.Request) -> web.Response:
        lines = [
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f'vllm:num_requests_running{{model_name="{self.model}"}} {self.running}',
            "# TYPE vllm:num_requests_waiting gauge",
            f'vllm:num_requests_waiting{{model_name="{self.model}"}} 0',
            "# TYPE vllm:kv_cache_usage_perc gauge",
            f'vllm:kv_cache_usage_perc{{model_name="{self.model}"}} {0.25 if self.running else 0.0}',
            "# TYPE vllm:prefix_cache_queries counter",
            f'vllm:prefix_cache_queries_total{{model_name="{self.model}"}} {10 * len(self.requests)}',
            "# TYPE vllm:prefix_cache_hits counter",
            f'vllm:prefix_cache_hits_total{{model_name="{self.model}"}} {5 * len(self.requests)}',
            "# TYPE vllm:generation_tokens counter",
            f'vllm:generation_tokens_total{{model_name="{self.model}"}} {self.generated_tokens}',
            "# TYPE vllm:request_generation_tokens histogram",
            f'vllm:request_generation_tokens_bucket{{le="+Inf",model_name="{self.model}"}} {len(self.requests)}',
            f'vllm:request_generation_tokens_count{{model_name="{self.model}"}} {len(self.requests)}',
            f'vllm:request_generation_tokens_sum{{model_name="{self.model}"}} {self.generated_tokens}',
        ]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        chat = request.path.endswith("/chat/completions")
        self.requests.append({"path": request.path, "body": body, "headers": dict(request.headers)})
        mode = self.mode
        if mode == "die":
            import os

            print("mock: out of memory on the first request", flush=True)
            os._exit(3)
        if mode in ("429", "500", "400"):
            # echoes the Authorization header, as some proxies do, so tests can check redaction
            auth = request.headers.get("Authorization", "")
            return web.json_response({"error": {"message": f"mock failure {mode} for {auth}"}}, status=int(mode))
        if mode == "reject_ids" and isinstance(body.get("prompt"), list):
            return web.json_response({"detail": [{"loc": ["body", "prompt"], "msg": "str type expected"}]}, status=422)
        if mode == "reject_extras" and "ignore_eos" in body:
            return web.json_response({"error": {"message": "Unrecognized request argument supplied: ignore_eos"}},
                                     status=400)
        if mode == "strict_stream_options" and "continuous_usage_stats" in (body.get("stream_options") or {}):
            # TGI-style strict schema: an unknown field is a 422
            return web.json_response({"error": "Failed to deserialize the JSON body: stream_options: unknown field "
                                               "`continuous_usage_stats`, expected `include_usage`"}, status=422)
        if mode == "too_long":  # vLLM's wording for an over-long prompt: a plain 400, not a field rejection
            return web.json_response({"error": {"message": "This model's maximum context length is 16 tokens. "
                                                "However, your prompt contains 600 input tokens."}}, status=400)
        if mode == "json_body":  # a server that ignores stream=true
            return web.json_response({"choices": [{"text": "whole answer"}]})
        prompt = body.get("prompt") if not chat else body["messages"][-1]["content"]
        n_prompt = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        n_out = int(body.get("max_tokens", 16))
        if mode == "stop_early":  # a server that ignores ignore_eos and hits EOS early
            n_out = max(1, n_out // 2)
        want_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if mode == "slow":
            await asyncio.sleep(self.slow_s)
        self.running += 1
        try:
            await self._stream_tokens(resp, chat, n_prompt, n_out, want_usage, mode, request)
        finally:
            self.running -= 1
        return resp

    async def _stream_tokens(self, resp: web.StreamResponse, chat: bool, n_prompt: int, n_out: int,
                             want_usage: bool, mode: str, request: web.Request) -> None:
        async def send(payload: str) -> None:
            if mode == "split":  # comments, CRLF line ends, and every event in 3-byte writes
                raw = f": keep-alive\r\ndata: {payload}\r\n\r\n".encode()
                for i in range(0, len(raw), 3):
                    await resp.write(raw[i:i + 3])
            else:
                await resp.write(f"data: {payload}\n\n".encode())

        if mode == "no_tokens":
            await send("[DONE]")
            return
        for i in range(n_out):
            text = f" t{i}"
            choice: dict[str, Any] = ({"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text})
            choice["finish_reason"] = "length" if i == n_out - 1 else None
            event: dict[str, Any] = {"id": "cmpl-1", "object": "chunk", "choices": [choice]}
            if want_usage and self.usage == "per_chunk":
                event["usage"] = {"prompt_tokens": n_prompt, "completion_tokens": i + 1, "total_tokens": n_prompt + i + 1}
            if mode == "malformed" and i == 1:
                await send('{"choices": [')
                continue
            if mode == "error_event" and i == 1:
                await send(json.dumps({"error": {"message": "engine died", "code": 500}}))
                continue
            await send(json.dumps(event))
            self.generated_tokens += 1
            if mode == "drop" and i == 1:
                assert request.transport is not None
                request.transport.abort()  # reset mid-stream, no chunked terminator
                return
            await asyncio.sleep(0)
        if want_usage and self.usage in ("per_chunk", "final"):
            await send(json.dumps({"id": "cmpl-1", "choices": [], "usage": {
                "prompt_tokens": n_prompt, "completion_tokens": n_out, "total_tokens": n_prompt + n_out}}))
        if mode != "no_done":
            await send("[DONE]")
