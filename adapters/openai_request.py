"""The body of each OpenAI-style request, and what the server turned out to refuse.

Every request asks for streaming, usage in the stream and exact output length
(`ignore_eos`, `min_tokens`: vLLM, SGLang, llama.cpp and others accept these
extensions). A server that rejects one of the optional fields with HTTP
400/422 (llama-cpp-python: a 500 saying "validation error") gets the request
again without it; `RequestShape` remembers that for
the rest of the run and says so in `notes`. A rejection is recognised only
when the error names the field and says it is unknown or of the wrong type,
so an ordinary 400 (a prompt that is too long) is never retried.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

from adapters.base import RequestSpec

_LENGTH_FIELDS = ("ignore_eos", "min_tokens", "top_k")
_USER = re.compile(r"\buser\b")
_UNKNOWN = re.compile(r"unrecognized|unknown|extra|not permitted|unexpected|not supported|unsupported|not allowed")
_WRONG_TYPE = re.compile(r"\bstr\b|string|type expected|input should be|valid str")


class RequestShape:
    """Builds request bodies; `learn()` drops an optional field the server refused."""

    def __init__(self, endpoint: Literal["completions", "chat"], prompt_mode: Literal["auto", "ids", "text"]) -> None:
        self.endpoint = endpoint
        self.prompt_mode = prompt_mode
        self.send_ids = endpoint == "completions" and prompt_mode != "text"
        self.send_length_controls = True
        self.send_stream_options = True
        self.send_continuous_usage = True  # vLLM's per-chunk usage; servers with strict schemas refuse it
        self.send_user = True  # OpenAI's end-user id: one per multi-turn session, for sticky routing and caches
        self.notes: list[str] = []

    def body(self, req: RequestSpec, model: str | None, prompt_text: Callable[[RequestSpec], str]) -> dict[str, Any]:
        """The JSON body for one streamed request."""
        body: dict[str, Any] = {"model": model, "max_tokens": req.max_tokens, "stream": True,
                                "temperature": req.temperature, "top_p": req.top_p}
        if self.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": prompt_text(req)}]
        else:
            body["prompt"] = list(req.prompt_ids) if self.send_ids else prompt_text(req)
        if req.seed is not None:
            body["seed"] = req.seed
        if req.user is not None and self.send_user:
            body["user"] = req.user
        if self.send_stream_options:
            body["stream_options"] = {"include_usage": True}
            if self.send_continuous_usage:
                body["stream_options"]["continuous_usage_stats"] = True
        if self.send_length_controls:
            min_tokens = req.max_tokens if req.ignore_eos else req.min_tokens
            if req.ignore_eos:
                body["ignore_eos"] = True
            if min_tokens:
                body["min_tokens"] = min_tokens
            if req.top_k > 0:
                body["top_k"] = req.top_k
        return body

    def learn(self, status: int, error_text: str, body: dict[str, Any]) -> bool:
        """After a 400/422 (or a validation 500): True when a field this body carried was refused and is now dropped (retry once)."""
        low = error_text.lower()
        # llama-cpp-python answers request-validation errors with a 500 that says so
        if status not in (400, 422) and not (status == 500 and "validation error" in low):
            return False
        unknown = bool(_UNKNOWN.search(low)) or status == 422
        changed = False
        options = body.get("stream_options") or {}
        if "continuous_usage_stats" in options and unknown and "continuous_usage_stats" in low:
            self.send_continuous_usage, changed = False, True
            self.notes.append("server rejected continuous_usage_stats: usage comes at the end only")
        elif options and unknown and "stream_options" in low:
            self.send_stream_options, changed = False, True
            self.notes.append("server rejected stream_options: token counts come from the client")
        if unknown and any(f in body and f in low for f in _LENGTH_FIELDS):
            self.send_length_controls, changed = False, True
            self.notes.append("server rejected ignore_eos/min_tokens: exact output length is not enforced")
        if (self.send_ids and self.prompt_mode == "auto" and isinstance(body.get("prompt"), list)
                and "prompt" in low and _WRONG_TYPE.search(low)):
            self.send_ids, changed = False, True
            self.notes.append("server does not take token-id prompts: sending text")
        # last, and only when nothing else was named: a chat error may quote a message's role "user"
        if not changed and unknown and "user" in body and self.send_user and _USER.search(low):
            self.send_user, changed = False, True
            self.notes.append("server rejected the user field: sessions are not marked per user")
        # a request sent before a concurrent one taught us the same lesson retries too
        return changed or self._outdated(body)

    def _outdated(self, body: dict[str, Any]) -> bool:
        """The body carries something this shape no longer sends (it was dropped since the body was built)."""
        options = body.get("stream_options") or {}
        return bool((not self.send_ids and isinstance(body.get("prompt"), list))
                    or (not self.send_user and "user" in body)
                    or (not self.send_stream_options and "stream_options" in body)
                    or (not self.send_continuous_usage and "continuous_usage_stats" in options)
                    or (not self.send_length_controls and any(f in body for f in _LENGTH_FIELDS)))
