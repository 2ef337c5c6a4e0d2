"""Any server with the OpenAI `/v1/embeddings` API (infinity-emb, vLLM, TEI, hosted APIs) as an embedding engine.

One POST per request through the load generator's own HTTP client (`adapters.http_stream.Pool`, the
openai adapter's): `{"model", "input": [texts], "encoding_format": "float"}`. The answer's arrival is
the client's stamp of the response's end; its tokens are the server's `usage.prompt_tokens`, or, with
`tokenizer` (the model's folder or tokenizer.json), the client's own count with the model's special
tokens, as the in-process engine counts them. A server whose usage counts characters (infinity-emb
does) is found at the warm-up (its count equals the warm-up texts' characters) and its usage is then
not used: tokens are None (tokens/s not reported, never guessed) unless `tokenizer` is given. Every answer is decoded and
its vectors counted against the inputs; they are kept only when a request asks for them (the checks).
A server without the endpoint fails the warm-up, before anything is measured, in one line. The server
may truncate an input past its model's length without saying so: the preflight cannot see that here.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import replace
from typing import Any, ClassVar

from pydantic import Field

from adapters import json_codec
from adapters.base import AdapterError, EngineInfo, EngineOptions, EngineUnavailable
from adapters.embed_base import EmbedAdapter, EmbedRequest, EmbedResult
from adapters.http_stream import HTTPError, Pool
from adapters.openai import base_url

PATH = "/v1/embeddings"


class OpenAIEmbedOptions(EngineOptions):
    url: str | None = Field(None, description="server URL, e.g. http://127.0.0.1:7997 (or /v1)")
    served_model: str | None = Field(None, description="model name the server serves (default: the first it lists)")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key")
    timeout_s: float = Field(600, gt=0, description="per-request timeout of the HTTP client")
    max_connections: int = Field(0, ge=0, description="HTTP connection cap (0: none)")
    tokenizer: str | None = Field(None, description="model folder or tokenizer.json: count tokens on the client")


class OpenAIEmbedAdapter(EmbedAdapter):
    name = "openai-embed"
    Options = OpenAIEmbedOptions
    served = True
    path: ClassVar[str] = PATH

    def __init__(self, model: str | None, options: OpenAIEmbedOptions | None = None) -> None:
        super().__init__(model, options)
        o = self.options
        assert isinstance(o, OpenAIEmbedOptions)
        if not o.url:
            raise EngineUnavailable("engine 'openai-embed' needs the server's address: --url http://127.0.0.1:PORT")
        try:
            self.url = base_url(o.url)
        except ValueError as e:
            raise EngineUnavailable(str(e)) from None
        self.served_model = o.served_model or model
        key = os.environ.get(o.api_key_env, "")
        self._headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
        self._http: Pool | None = None
        self._usage_ok = True  # False once the warm-up shows the server's usage counts characters
        self._tokenizer: Any = None
        if o.tokenizer:
            self._tokenizer = _load_tokenizer(o.tokenizer)

    def _start(self) -> EngineInfo:
        if self.served_model is None:
            self.served_model = self._first_model()
        return EngineInfo(adapter=self.name, engine=f"server ({self.path})", version="unknown", device=self.url,
                          model=self.served_model, format="server", precision="unknown", batching="unknown",
                          extra={"task": self.tasks[0], "endpoint": self.path})

    def _first_model(self) -> str:
        try:
            with urllib.request.urlopen(urllib.request.Request(self.url + "/v1/models", headers=self._headers),
                                        timeout=30) as r:
                data = json.loads(r.read())["data"]
            return str(data[0]["id"])
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            raise EngineUnavailable(f"could not ask {self.url}/v1/models which model it serves ({e}); "
                                    "give --opt served_model=NAME") from None

    def _learn(self, warm_up: EmbedResult) -> None:
        if warm_up.n_tokens_server is not None and warm_up.n_tokens_server == self._characters(self.warm_up_request()):
            self._usage_ok = False
            self._notes.append("the server's usage.prompt_tokens counts characters, not tokens: not used"
                               + ("; tokens counted on the client with the model's tokenizer" if self._tokenizer
                                  else "; give --opt tokenizer=MODEL_FOLDER for tokens/s"))

    def preflight_hint(self, error: AdapterError) -> str:
        if "HTTP 404" in str(error) or "HTTP 405" in str(error):
            return (f"the server at {self.url} has no {self.path} endpoint: start it with a model for it (infinity "
                    "serves it with --url-prefix /v1)")
        return f"check that {self.url} serves an embedding model named '{self.served_model}'"

    def _pool(self) -> Pool:
        pool = self._http
        if pool is None or pool.loop is not asyncio.get_running_loop():
            if pool is not None:
                pool.detach()  # belongs to another (finished) loop
            o = self.options
            assert isinstance(o, OpenAIEmbedOptions)
            pool = self._http = Pool(self.url, o.max_connections, o.timeout_s)
        return pool

    async def aclose(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def _body(self, req: EmbedRequest) -> dict[str, Any]:
        return {"model": self.served_model, "input": list(req.texts), "encoding_format": "float"}

    def _parse(self, body: bytes, req: EmbedRequest, t_ns: int) -> EmbedResult:
        return _result(body, len(req.texts), req.return_vectors, t_ns)

    def _count(self, req: EmbedRequest) -> int:
        """The request's tokens as the model's tokenizer counts them, special tokens included."""
        return sum(len(e.ids) for e in self._tokenizer.encode_batch(list(req.texts)))

    @staticmethod
    def _characters(req: EmbedRequest) -> int:
        """What a server that counts characters reports for this request."""
        return sum(len(t) for t in req.texts)

    async def embed(self, req: EmbedRequest) -> EmbedResult:
        pool = self._pool()
        path = self.path
        data = json_codec.dumps(self._body(req))
        prefix = pool.prefixes.get(path)
        if prefix is None:
            prefix = pool.prefixes[path] = pool.head_prefix("POST", path, self._headers)
        try:
            resp, _ = await pool.send(b"%b%d\r\n\r\n%b" % (prefix, len(data), data))
            while not resp.complete:
                await resp.more()
        except TimeoutError as e:
            raise AdapterError("timeout", f"no complete response within {pool.timeout_s:g} s") from e
        except HTTPError as e:
            raise AdapterError("connection", f"{path}: {e}") from e
        t = time.perf_counter_ns()
        if resp.status >= 400:
            kind = "http_429" if resp.status == 429 else "http_5xx" if resp.status >= 500 else "http_4xx"
            raise AdapterError(kind, f"HTTP {resp.status} from {path}: {resp.text(300)}")
        res = self._parse(b"".join(r[1] for r in resp.reads), req, t)
        if self._tokenizer is not None:
            return replace(res, n_tokens=self._count(req))
        return res if self._usage_ok else replace(res, n_tokens=None)


def _load_tokenizer(path: str) -> Any:
    """A `tokenizers.Tokenizer` from a model folder or a tokenizer.json; EngineUnavailable names the fix."""
    from pathlib import Path

    from tokenizers import Tokenizer

    p = Path(path).expanduser()
    file = p / "tokenizer.json" if p.is_dir() else p
    if not file.is_file():
        raise EngineUnavailable(f"tokenizer={path}: no tokenizer.json there; give the model's folder or its file")
    tok = Tokenizer.from_file(str(file))
    tok.no_truncation()
    tok.no_padding()
    return tok


def _result(body: bytes, n_inputs: int, return_vectors: bool, t_ns: int) -> EmbedResult:
    """An `/v1/embeddings` answer as an EmbedResult; a malformed or short answer is a `stream` error."""
    try:
        doc: Any = json_codec.loads(body)
        items = sorted(doc["data"], key=lambda d: d["index"])
        vectors = [d["embedding"] for d in items]
        usage = doc.get("usage") or {}
    except (ValueError, KeyError, TypeError) as e:
        raise AdapterError("stream", f"{PATH} answered something that is not an embeddings list "
                                     f"({type(e).__name__}: {e}): {body[:200]!r}") from None
    if len(vectors) != n_inputs or not vectors or not isinstance(vectors[0], list):
        raise AdapterError("stream", f"{PATH} answered {len(vectors)} float vectors for {n_inputs} inputs")
    n_tokens = usage.get("prompt_tokens", usage.get("total_tokens"))
    n = int(n_tokens) if n_tokens is not None else None
    return EmbedResult(t_ns, n_inputs, n, len(vectors[0]), tuple(tuple(v) for v in vectors) if return_vectors else None,
                       n_tokens_server=n)
