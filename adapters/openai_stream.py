"""Token accounting for one OpenAI-style streamed response (completions or chat).

Servers report tokens three ways, and `StreamCounter` copes with each:
- per-chunk usage (vLLM with `continuous_usage_stats`): a chunk's tokens are
  the difference of the server's cumulative `usage.completion_tokens`;
- final usage only (OpenAI, SGLang, TGI, llama.cpp server): each non-empty
  content chunk counts 1 (the client's count), and the final usage corrects
  the total on the last content chunk;
- no usage at all (llama-cpp-python's server): the client's count stands.
To apply the correction without moving timestamps, each chunk is held back
until the next event arrives; its `t_ns` is still its own arrival time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from adapters.base import AdapterError, Chunk

UsageMode = Literal["per_chunk", "final", "none"]


class StreamCounter:
    """Feed decoded SSE payloads in arrival order; get Chunks out, the last one from `finish()`."""

    def __init__(self, endpoint: Literal["completions", "chat"],
                 count_text: Callable[[str], int] | None = None) -> None:
        self.endpoint = endpoint
        self.count_text = count_text  # tokenizer count of the whole output text, run once at the end
        self.done = False  # saw `data: [DONE]`
        self.finish_reason: str | None = None
        self.usage_mode: UsageMode = "none"
        self.final_total: int | None = None  # server's completion_tokens at the end
        self.n_prompt: int | None = None
        self._server_total = 0  # last cumulative completion_tokens seen on a content chunk
        self._sum = 0  # tokens put on chunks so far (held chunk included)
        self._client_chunks = 0
        self._texts: list[str] = []
        self._held: Chunk | None = None

    def feed(self, payload: str, t_ns: int) -> Chunk | None:
        """One event's data; returns the previously held chunk when a new one replaces it."""
        if payload.strip() == "[DONE]":
            self.done = True
            return None
        if self.done:
            raise AdapterError("stream", f"data after [DONE]: {payload[:120]!r}")
        try:
            obj = json.loads(payload)
        except ValueError as e:
            raise AdapterError("stream", f"malformed JSON in stream ({e}): {payload[:120]!r}") from e
        if not isinstance(obj, dict):
            raise AdapterError("stream", f"stream event is not a JSON object: {payload[:120]!r}")
        if "error" in obj:
            raise AdapterError("stream", f"server error inside the stream: {str(obj['error'])[:200]}")
        usage = obj.get("usage") or None
        if usage is not None:
            self._read_usage(usage)
        choices = obj.get("choices") or []
        if not choices:
            return None  # usage-only chunk (include_usage) or keep-alive object
        choice = choices[0]
        text = self._text(choice)
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        ct = usage.get("completion_tokens") if usage is not None else None
        if isinstance(ct, int):
            self.usage_mode = "per_chunk"
            n = max(ct - self._server_total, 0)
            self._server_total = ct
        else:
            n = 1 if text else 0
        if text:
            self._client_chunks += 1
            self._texts.append(text)
        if n == 0 and not text:
            return None  # role-only or empty finish chunk: carries nothing
        self._sum += n
        chunk = Chunk(t_ns, n, text or None, n_out_total=self._server_total if self.usage_mode == "per_chunk" else None,
                      n_out_client=self._client_chunks)
        out, self._held = self._held, chunk
        return out

    def finish(self) -> Chunk:
        """End of a stream that saw [DONE]: the last chunk, corrected to the server's total."""
        if self._held is None or self._sum == 0 and not self.final_total:
            raise AdapterError("stream", "stream ended without any output token")
        total = self.final_total if self.final_total is not None else (
            self._server_total if self.usage_mode == "per_chunk" else None)
        n_last = self._held.n_tokens
        if total is not None and total != self._sum:
            n_last = max(n_last + total - self._sum, 0)
        client = self.count_text("".join(self._texts)) if self.count_text else self._client_chunks
        last = replace(self._held, n_tokens=n_last, n_prompt=self.n_prompt,
                       n_out_total=total, n_out_client=client)
        self._held = None
        return last

    @property
    def n_out(self) -> int:
        """Output tokens by the best count available (server total, else the client's)."""
        return self.final_total if self.final_total is not None else self._sum

    def _read_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            raise AdapterError("stream", f"usage is not an object: {str(usage)[:120]!r}")
        if isinstance(usage.get("prompt_tokens"), int):
            self.n_prompt = usage["prompt_tokens"]
        if isinstance(usage.get("completion_tokens"), int):
            self.final_total = usage["completion_tokens"]  # the last one seen is the final count
            if self.usage_mode == "none":
                self.usage_mode = "final"

    def _text(self, choice: dict[str, Any]) -> str:
        if self.endpoint == "chat":
            delta = choice.get("delta") or {}
            return str(delta.get("content") or delta.get("reasoning_content") or "")
        return str(choice.get("text") or "")
