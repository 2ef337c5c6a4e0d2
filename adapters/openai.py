"""The `openai` adapter: any OpenAI-compatible server over streaming HTTP (SSE).

Sends `/v1/completions` (prompt as token ids where the server takes them, else
text) or `/v1/chat/completions`, asks for usage in the stream and for exact
output length (`ignore_eos`, `min_tokens`), and turns every failure into an
`AdapterError` with its kind. Token accounting lives in `openai_stream`, SSE
framing in `sse`, server start/stop for `launch=` in `adapters.launch`. The API
key is read from the environment at request time and never stored or logged.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from adapters import json_codec
from adapters.base import (
    Adapter,
    AdapterError,
    Capabilities,
    Chunk,
    EngineInfo,
    EngineOptions,
    EngineUnavailable,
    ErrorKind,
    RequestSpec,
    WorkerClient,
)
from adapters.http_stream import HTTPError, Pool, Response
from adapters.kernel_stamps import ArrivalClock, arrival_clock_info
from adapters.kernel_stamps import offset as kernel_offset
from adapters.openai_request import RequestShape
from adapters.openai_stream import StreamCounter
from adapters.sse import SSEDecoder

# `owned_by` in /v1/models -> engine name
_OWNERS = {"vllm": "vLLM", "sglang": "SGLang", "llamacpp": "llama.cpp server", "tensorrt_llm": "TensorRT-LLM",
           "lmdeploy": "LMDeploy", "tgi": "TGI", "openai": "OpenAI"}


def base_url(url: str) -> str:
    """`http://h:p`, `http://h:p/`, `http://h:p/v1` -> `http://h:p` (the server root, credentials removed)."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"server url must start with http:// or https://, got {url!r}")
    url = public_url(url)
    return url[:-3] if url.endswith("/v1") else url


def public_url(url: str) -> str:
    """The URL without user:password or query string, safe to store in results."""
    p = urllib.parse.urlsplit(url)
    host = p.hostname or ""
    netloc = f"{host}:{p.port}" if p.port else host
    return urllib.parse.urlunsplit((p.scheme, netloc, p.path, "", ""))


class OpenAIOptions(EngineOptions):
    url: str | None = Field(None, description="server URL, e.g. http://127.0.0.1:8000 (or /v1)")
    endpoint: Literal["completions", "chat"] = Field("completions", description="which API to call")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key")
    timeout_s: float = Field(600, gt=0, description="per-request timeout of the HTTP client")
    prompt_mode: Literal["auto", "ids", "text"] = Field("auto", description="send token ids or decoded text")
    tokenizer: str | None = Field(None, description="HF model folder or tokenizer.json: text prompts, exact counts")
    served_model: str | None = Field(None, description="model name the server serves (default: asked)")
    launch: str | None = Field(None, description="server command advisor starts, benchmarks and stops")
    log_dir: str | None = Field(None, description="folder for a launched server's log")
    health_timeout_s: float = Field(300, gt=0, description="how long a launched server may take to be healthy")
    max_connections: int = Field(0, ge=0, description="HTTP connection cap (0: none)")
    arrival_clock: ArrivalClock = Field("kernel", description="stamp reads with the kernel's receive time "
                                        "(Linux, plain HTTP; else the loop's) or when the event loop ran them")


class OpenAIAdapter(Adapter[OpenAIOptions]):
    name: ClassVar[str] = "openai"
    Options: ClassVar[type[OpenAIOptions]] = OpenAIOptions
    capabilities: ClassVar[Capabilities] = Capabilities(served=True, per_chunk_tokens=False)
    warm_up_together: ClassVar[bool] = False  # some servers (llama-cpp-python's) drop a second concurrent stream

    def __init__(self, model: str | None, options: OpenAIOptions | None = None) -> None:
        super().__init__(model, options)
        o = self.options
        if not o.url:
            raise ValueError("the openai engine needs the server's address: --url http://HOST:PORT "
                             "(with --launch \"COMMAND\" when advisor should start the server)")
        if o.endpoint == "chat" and o.prompt_mode == "ids":
            raise ValueError("the chat endpoint takes text only: use prompt_mode='text' or 'auto'")
        url = o.url
        self.url = base_url(url)
        parts = urllib.parse.urlsplit(url.strip())
        # user:password in the URL becomes Basic auth, kept apart so it never reaches results
        self._basic = (urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or "")) \
            if parts.username else None
        self.endpoint = o.endpoint
        self.api_key_env = o.api_key_env
        self.timeout_s = float(o.timeout_s)
        self.prompt_mode = o.prompt_mode
        tokenizer = o.tokenizer
        if tokenizer is None and model is not None and Path(model).is_dir():
            tokenizer = model  # a local HF folder: its tokenizer gives text prompts and client counts
        self.tokenizer_path = tokenizer
        self.served_model = o.served_model
        self.launch = o.launch
        self.log_dir = o.log_dir
        self.health_timeout_s = float(o.health_timeout_s)
        self.max_connections = int(o.max_connections)
        self.arrival_clock = o.arrival_clock
        self.shape = RequestShape(self.endpoint, self.prompt_mode)  # what we send, and what the server refused
        self._notes = self.shape.notes
        self.short_requests = 0  # ignore_eos asked, fewer/more tokens came back
        self.usage_modes: dict[str, int] = {}
        self._tok: Any = None
        self._server: Any = None
        self._http: Pool | None = None
        self._running = 0
        self.metrics_url: str | None = None  # the server's Prometheus endpoint, found by start()

    # ---- lifecycle -------------------------------------------------------------------------
    def _start(self) -> EngineInfo:
        pid = None
        extra: dict[str, Any] = {}
        if self.launch:
            from adapters.launch import ManagedServer, redacted_command

            # without --opt log_dir the log's folder is temporary: gone at close unless an error names it
            self._server = ManagedServer(self.launch, health_urls=[f"{self.url}/v1/models", f"{self.url}/health"],
                                         log_path=Path(self.log_dir) / "server.log" if self.log_dir else None,
                                         health_timeout_s=self.health_timeout_s)
            try:
                pid = self._server.start()
            except BaseException:
                self._close()
                raise
            extra["server_log"] = str(self._server.log_path)
            extra["launch"] = redacted_command(self.launch)
        try:
            return self._describe(pid, extra)
        except EngineUnavailable as e:
            log = self._keep_log()  # a launched server's log is what tells why: kept, and named
            self._close()  # never leave a launched server behind a failed start
            if log is None:
                raise
            raise EngineUnavailable(f"{e}; the launched server's log: {log}") from None
        except BaseException:
            self._close()  # never leave a launched server behind a failed start
            raise

    def _describe(self, pid: int | None, extra: dict[str, Any]) -> EngineInfo:
        """Ask the (healthy) server what it serves; learn the model name, version and metrics endpoint."""
        models = self._get_json("/v1/models")
        if models is None:
            raise EngineUnavailable(f"no OpenAI-compatible server answers at {public_url(self.url)}/v1/models; "
                                    "start it first or pass launch='<server command>'")
        data = [m for m in models.get("data", []) if isinstance(m, dict)] if isinstance(models, dict) else []
        ids = [str(m.get("id")) for m in data]
        if self.served_model is None:
            if self.model in ids or not ids:
                self.served_model = self.model
            else:
                self.served_model = ids[0]
                if self.model is not None:
                    self._notes.append(f"server serves {ids}; using {ids[0]!r} for model {self.model!r}")
        owner = str(data[0].get("owned_by", "")) if data else ""
        self.metrics_url = self._find_metrics()
        if self.metrics_url:
            extra["metrics_url"] = public_url(self.metrics_url)
        version_doc = self._get_json("/version")
        version = str(version_doc.get("version", "unknown")) if isinstance(version_doc, dict) else "unknown"
        if self.tokenizer_path:
            self._tok = _load_tokenizer(self.tokenizer_path)
        extra.update({"endpoint": self.endpoint, "owned_by": owner, "served_model": self.served_model,
                      **arrival_clock_info(self.arrival_clock == "kernel" and self.url.startswith("http://"))})
        return EngineInfo(adapter="openai", engine=_OWNERS.get(owner.lower(), "openai-compatible"), version=version,
                          device=public_url(self.url), model=str(self.model or self.served_model), format="server",
                          precision="unknown", batching="unknown", pid=pid,
                          # prompt ids stay inside the tokenizer's vocabulary (a server refuses ids past its own)
                          vocab_size=int(self._tok.get_vocab_size()) if self._tok is not None else None,
                          max_model_len=_first_int(data, "max_model_len"), extra=extra, notes=tuple(self._notes))

    def stats(self) -> dict[str, float]:
        out = {"running": float(self._running), "short_requests": float(self.short_requests)}
        if self._http is not None and self._http.arrival_clock == "kernel":  # reads that fell back to the loop's time
            clock = kernel_offset()
            out.update(reads_unstamped=float(clock.n_unstamped), stamps_clamped=float(clock.n_clamped),
                       arrival_offset_spread_ns=float((clock.max_offset_ns or 0) - (clock.min_offset_ns or 0)))
        return out

    def worker_client(self) -> WorkerClient:
        options = self.options.model_copy(update={"launch": None, "log_dir": None})  # the server is up already
        return WorkerClient(self.name, self.model, options, self.info,
                            {"url": self.url, "served_model": self.served_model, "shape": self.shape})

    def _attach(self, state: dict[str, Any]) -> None:
        self.url, self.served_model, self.shape = state["url"], state["served_model"], state["shape"]
        self._notes = self.shape.notes
        if self.tokenizer_path:
            self._tok = _load_tokenizer(self.tokenizer_path)

    async def aclose(self) -> None:
        if self._http is not None:
            if self._http.loop is asyncio.get_running_loop():
                self._http.close()
            else:
                self._http.detach()
        self._http = None

    def preflight_hint(self, error: BaseException) -> str:
        kind = error.kind if isinstance(error, AdapterError) else ""
        if kind == "refused":
            return "nothing was measured"
        # a launched server's log is named, and kept for the user (one that died on the warm-up request shows as a
        # connection error: its log says why)
        kept = self._keep_log()
        log = f"the server's log ({kept})" if kept is not None else "the server's log"
        if kind == "connection":
            launched = f"; see {log}" if kept is not None else ""
            return f"is the server at {public_url(self.url)} up and reachable?{launched}"
        if kind.startswith("http_"):
            return f"check the model name (--model / --opt served_model=) and {log}"
        return f"check {log}"

    def _keep_log(self) -> Path | None:
        """A launched server's log path, its folder then kept past `_close` (None: no server was launched)."""
        return self._server.keep_log() if self._server is not None else None

    def _close(self) -> None:
        if self._http is not None:
            self._http.detach()  # its loop is gone if aclose() was not awaited; don't leak a warning
            self._http = None
        if self._server is not None:
            self._server.close()
            self._server = None

    # ---- requests --------------------------------------------------------------------------
    async def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        """One streamed request; its chunks, with settled token counts, are handed over when it ends."""
        self._running += 1
        try:
            for _attempt in range(3):  # at most one retry per optional field the server rejects
                body = self.shape.body(req, self.served_model or self.model, self._prompt_text)
                counter = StreamCounter(self.endpoint, self._token_ends if self._tok is not None else None)
                if await self._post(body, counter):
                    break
            else:
                raise AdapterError("http_4xx", "server kept rejecting the request after dropping optional fields")
            chunks = counter.finish(req.max_tokens)
            if req.ignore_eos and counter.n_out != req.max_tokens:
                self.short_requests += 1
            self.usage_modes[counter.usage_mode] = self.usage_modes.get(counter.usage_mode, 0) + 1
        finally:
            self._running -= 1
        for chunk in chunks:
            yield chunk

    async def _post(self, body: dict[str, Any], counter: StreamCounter) -> bool:
        """One HTTP attempt, fed into `counter`; False when the server rejected an optional field (retry)."""
        path = "/v1/chat/completions" if self.endpoint == "chat" else "/v1/completions"
        pool = self._pool()
        data = json_codec.dumps(body)
        prefix = pool.prefixes.get(path)  # the headers (API key included) are read once per pool, not per request
        if prefix is None:
            prefix = pool.prefixes[path] = pool.head_prefix("POST", path, self._request_headers())
        request = b"%b%d\r\n\r\n%b" % (prefix, len(data), data)
        resp: Response | None = None
        conn = None
        try:
            # the pool times the exchange out (timeout_s): HTTPTimeout, a TimeoutError
            # woken early by an error event inside a stream that stays open
            resp, conn = await pool.send(request, wake_on=b'"error"')
            if resp.status >= 400 or resp.content_type == "application/json":
                while not resp.complete:
                    await resp.more()
                if resp.status >= 400:
                    text = resp.text(300)
                    if self.shape.learn(resp.status, text, body):
                        return False
                    kind: ErrorKind = ("http_429" if resp.status == 429 else
                                       "http_5xx" if resp.status >= 500 else "http_4xx")
                    raise AdapterError(kind, self._redact(f"HTTP {resp.status} from {path}: {text}"))
                raise AdapterError("stream", "server answered JSON, not an event stream (no streaming?): "
                                   f"{resp.text(200)}")
            decoder = SSEDecoder()
            seen = 0
            while True:
                reads = resp.reads
                for t_ns, raw in reads[seen:] if seen else reads:
                    if not (decoder.idle() and counter.feed_read(raw, t_ns)):
                        counter.feed_many(decoder.feed(raw), t_ns)
                seen = len(reads)
                if resp.complete:
                    break
                await resp.more()
            counter.feed_many(decoder.flush(), time.perf_counter_ns())
        except AdapterError as e:
            raise AdapterError(e.kind, self._redact(str(e))) from None
        except TimeoutError as e:
            raise AdapterError("timeout", f"no complete response within timeout_s={self.timeout_s:g}") from e
        except HTTPError as e:
            raise AdapterError("connection", self._redact(str(e))) from e
        finally:
            if conn is not None and resp is not None and not resp.complete:
                conn.close()  # abandoned mid-response (an error, a timeout, a cancel): never reused
        if not counter.done:
            raise AdapterError("stream", "stream ended without data: [DONE] (truncated response)")
        return True

    def _prompt_text(self, req: RequestSpec) -> str:
        if req.prompt_text is not None:
            return req.prompt_text
        if self._tok is None:
            raise AdapterError("refused", "this server needs text prompts and advisor has no tokenizer to decode "
                               "the token ids: pass --opt tokenizer=<HF model folder or tokenizer.json>, or "
                               "--model <HF model folder>")
        return str(self._tok.decode(list(req.prompt_ids), skip_special_tokens=True))

    def answer_ids(self, text: str) -> tuple[int, ...] | None:
        return tuple(self._tok.encode(text, add_special_tokens=False).ids) if self._tok is not None else None

    def _token_ends(self, text: str) -> list[int]:
        """End offset of each token of `text` under the model's tokenizer (one encode per request)."""
        return [end if end > start else start + 1
                for start, end in self._tok.encode(text, add_special_tokens=False).offsets]

    def _request_headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json", **self._headers()}

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        if key:
            return {"Authorization": f"Bearer {key}"}
        if self._basic:
            token = base64.b64encode(f"{self._basic[0]}:{self._basic[1]}".encode()).decode()
            return {"Authorization": f"Basic {token}"}
        return {}

    def _redact(self, message: str) -> str:
        """Remove the API key (and URL credentials) from a message that may echo them."""
        secrets = [os.environ.get(self.api_key_env) or "", *(self._basic or ())]
        if self._basic:
            secrets.append(base64.b64encode(f"{self._basic[0]}:{self._basic[1]}".encode()).decode())
        for secret in secrets:
            if len(secret) >= 4:
                message = message.replace(secret, "***")
        return message

    def _pool(self) -> Pool:
        """One connection pool per event loop (and server address), created inside it."""
        pool = self._http
        if pool is None or pool.loop is not asyncio.get_running_loop() or pool.url != self.url:
            if pool is not None:
                pool.detach()  # belongs to another (finished) loop
            pool = self._http = Pool(self.url, self.max_connections, self.timeout_s,
                                     kernel_stamps=self.arrival_clock == "kernel")
        return pool

    def _find_metrics(self) -> str | None:
        """The server's Prometheus endpoint (vLLM, TGI, SGLang, llama.cpp --metrics: /metrics; trtllm-serve)."""
        from adapters.launch import http_ok

        for path in ("/metrics", "/prometheus/metrics"):
            if http_ok(self.url + path, timeout_s=5):
                return self.url + path
        return None

    def _get_json(self, path: str) -> Any:
        """Blocking GET used by start() only (before or outside the event loop); None if unreachable."""
        request = urllib.request.Request(self.url + path, headers=self._headers())
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return json.loads(resp.read().decode("utf-8", errors="replace"))
        except (urllib.error.URLError, OSError, ValueError):
            return None


def _first_int(items: list[dict[str, Any]], key: str) -> int | None:
    value = items[0].get(key) if items else None
    return value if isinstance(value, int) else None


def _load_tokenizer(path: str) -> Any:
    from model_cache.tokenizer import load_tokenizer  # not on import: a worker that needs no tokenizer skips it

    try:
        return load_tokenizer(path, required=True)
    except FileNotFoundError as e:
        raise EngineUnavailable(f"{e}: pass tokenizer=<HF model folder or tokenizer.json>") from None

