"""A streaming OpenAI-compatible server that misbehaves on purpose and logs what it really did.

Run it as its own process (so it never shares the client's interpreter):

    python -m tests.faults.server --port 18123 --tokenizer MODEL_DIR --tokens-per-chunk 4 \\
        --tpot-ms 8 --usage final --log server.jsonl

Each request streams `max_tokens` tokens, `--tokens-per-chunk` per SSE chunk,
one chunk every tokens_per_chunk x tpot_ms. With a tokenizer, the text is
words of the model's own vocabulary that survive decode and re-encode (so a
client that re-tokenizes the stream gets exactly the tokens that were sent);
without one, " w0", " w1", ... Usage comes per chunk, only at the end, or not
at all. After writing each chunk the server stamps `time.perf_counter_ns()`
(the system's monotonic clock, the same in every process) and appends one
line per request to `--log`: when the request arrived and every chunk's write
time and token count: the ground truth a client's measurements are checked
against.

Modes: ok, 500, 429, hang (headers, then nothing), close (drops the
connection after 2 chunks), malformed (broken JSON in chunk 2), refuse (400
for every request); `--fail-after N` applies the mode only after N requests
(so a client's warm-up passes); `--fail-every N` applies it to every Nth of those only
(`--mode hang --fail-every 4`: one request in four hangs); `--die-after N`: the process exits when
request N+1 arrives (killed mid-run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import time
from typing import Any

from aiohttp import web

MODES = ("ok", "500", "429", "hang", "close", "malformed", "refuse")


def word_pool(tokenizer_path: str | None) -> list[tuple[int, str]]:
    """(id, text) of vocabulary words ' abc' that encode back to themselves, or made-up words without one."""
    if not tokenizer_path:
        return [(i, f" w{i}") for i in range(200)]
    from tokenizers import Tokenizer

    path = tokenizer_path if tokenizer_path.endswith(".json") else os.path.join(tokenizer_path, "tokenizer.json")
    tok = Tokenizer.from_file(path)
    pool = []
    for t in range(tok.get_vocab_size()):
        s = tok.decode([t])
        if re.fullmatch(r" [a-z]{2,}", s) and tok.encode(s, add_special_tokens=False).ids == [t]:
            pool.append((t, s))
    assert len(pool) >= 50, "the tokenizer has too few whole-word tokens for the fault server"
    return pool


class FaultServer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.a = args
        self.pool = word_pool(args.tokenizer)
        self.started = 0
        self.log = open(args.log, "a") if args.log else None  # noqa: SIM115 (open for the server's life)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/health", self.health)
        app.router.add_post("/v1/completions", self.generate)
        app.router.add_post("/v1/chat/completions", self.generate)
        return app

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": "fault-model", "object": "model", "owned_by": "faults", "max_model_len": 4096}]})

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def generate(self, request: web.Request) -> web.StreamResponse:
        t_recv = time.perf_counter_ns()
        body = await request.json()
        a = self.a
        self.started += 1
        if a.die_after and self.started > a.die_after:
            os._exit(17)  # killed mid-run: every open connection drops
        after = self.started - a.fail_after  # 1 for the first request the mode may apply to
        mode = a.mode if after > 0 and after % a.fail_every == 0 else "ok"
        if mode in ("500", "429"):
            return web.json_response({"error": {"message": f"fault server says {mode}"}}, status=int(mode))
        if mode == "refuse":
            return web.json_response({"error": {"message": "bad request: unknown model configuration"}}, status=400)
        chat = request.path.endswith("/chat/completions")
        n_out = max(1, int(int(body.get("max_tokens", 16)) * a.short_factor))  # < 1: answers cut short
        prompt = body.get("prompt") if not chat else body["messages"][-1]["content"]
        n_prompt = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
        want_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        per_chunk = want_usage and a.usage == "per_chunk" and bool(
            (body.get("stream_options") or {}).get("continuous_usage_stats"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if mode == "hang":
            await asyncio.sleep(3600)
        rng = random.Random(self.started)
        words = [rng.choice(self.pool) for _ in range(n_out)]
        chunks: list[tuple[int, int]] = []
        await asyncio.sleep(a.ttft_ms / 1e3)
        sent = 0
        k = a.tokens_per_chunk
        while sent < n_out:
            if sent:
                await asyncio.sleep(a.tpot_ms * min(k, n_out - sent) / 1e3)
            n = min(k, n_out - sent)
            text = "".join(w for _, w in words[sent:sent + n])
            sent += n
            choice: dict[str, Any] = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
            choice["finish_reason"] = "length" if sent == n_out else None
            event: dict[str, Any] = {"id": "f", "object": "chunk", "choices": [choice]}
            if per_chunk:
                event["usage"] = {"prompt_tokens": n_prompt, "completion_tokens": sent,
                                  "total_tokens": n_prompt + sent}
            payload = json.dumps(event)
            if mode == "malformed" and len(chunks) == 1:
                payload = '{"choices": ['
            await resp.write(f"data: {payload}\n\n".encode())
            chunks.append((time.perf_counter_ns(), n))
            if mode == "close" and len(chunks) == 2:
                assert request.transport is not None
                request.transport.abort()
                break
        else:
            if want_usage and a.usage in ("per_chunk", "final"):
                await resp.write(("data: " + json.dumps({"id": "f", "choices": [], "usage": {
                    "prompt_tokens": n_prompt, "completion_tokens": round(n_out * a.claim_factor),
                    "total_tokens": n_prompt + round(n_out * a.claim_factor)}})
                    + "\n\n").encode())
            await resp.write(b"data: [DONE]\n\n")
        if self.log is not None:
            self.log.write(json.dumps({"t_recv_ns": t_recv, "n_prompt": n_prompt, "max_tokens": n_out,
                                       "chunks": chunks, "tokens": [t for t, _ in words[:sent]]}) + "\n")
            self.log.flush()
        return resp


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--tokenizer", default=None)
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument("--ttft-ms", type=float, default=20.0)
    p.add_argument("--tpot-ms", type=float, default=8.0)
    p.add_argument("--usage", choices=("per_chunk", "final", "none"), default="final")
    p.add_argument("--mode", choices=MODES, default="ok")
    p.add_argument("--die-after", type=int, default=0)
    p.add_argument("--fail-after", type=int, default=0, help="the mode applies after this many requests")
    p.add_argument("--fail-every", type=int, default=1, help="the mode applies to every Nth request (after those)")
    p.add_argument("--log", default=None)
    p.add_argument("--claim-factor", type=float, default=1.0, help="final usage claims this many times the tokens")
    p.add_argument("--short-factor", type=float, default=1.0, help="answer this share of max_tokens")
    p.add_argument("--api-key", default=None, help="accepted and printed, as real servers do (the redaction tests)")
    return p.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse(argv)
    server = FaultServer(args)
    print(f"fault server on 127.0.0.1:{args.port} mode={args.mode} k={args.tokens_per_chunk} argv={argv} "
          f"env HF_TOKEN={os.environ.get('HF_TOKEN')}", flush=True)
    web.run_app(server.app(), host="127.0.0.1", port=args.port, access_log=None, print=None)


if __name__ == "__main__":
    main(sys.argv[1:])
