"""Token accounting for one OpenAI-style streamed response (completions or chat).

A chunk's token count comes from the first of these sources that exists
(docs/metrics.md, "Token counts"):

1. `server_per_chunk`: the server's cumulative `usage.completion_tokens` on
   every content chunk (vLLM with `continuous_usage_stats`); a chunk's count
   is the difference to the previous one.
2. `tokenizer_aligned`: the model's own tokenizer on the whole streamed text,
   run once when the request has ended (never per chunk: no O(n^2)
   re-encoding), each token given to the chunk in which its last character
   arrived.
3. `text_proportional`: no tokenizer, but the server's final total: that total
   spread over the content chunks in proportion to their text length.
4. `client_chunks`: neither: one token per content chunk (the client's count).

With the model's tokenizer, a server total more than 10% (and 2 tokens) above
the tokenizer's count of the streamed text is overruled: the tokenizer's count
is the total and the source `tokenizer_over_usage` says so.
Whatever the source, counts are never negative and sum to the (kept) final
total: a residual is spread over the chunks (largest
remainder, by text length), never put on one chunk. Where the counts are the
client's estimate (sources 2-4), a chunk that carried text never gets 0
tokens while the total allows one per such chunk: the server made a token to
send it (a token the tokenizer ends in the next chunk, or text the tokenizer
splits differently, such as invalid UTF-8 replaced by U+FFFD, would otherwise
move the first token, and TTFT, to a later chunk). Every chunk keeps its own
arrival time; the counts are settled when the stream ends, so chunks are
handed over then.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Sequence
from typing import Any, Literal

from adapters import json_codec
from adapters.base import AdapterError, Chunk, TokenSource

UsageMode = Literal["per_chunk", "final", "none"]
# The server's usage and the model's tokenizer on the streamed text disagree by more than this: the tokenizer wins
USAGE_TOLERANCE_SHARE = 0.1
USAGE_TOLERANCE_TOKENS = 2
# full text -> the end offset (exclusive, in characters) of each of its tokens
TokenEnds = Callable[[str], list[int]]


def spread(counts: Sequence[int], total: int, weights: Sequence[float]) -> list[int]:
    """`counts` moved to sum to `total`: the difference shared out by `weights` (largest remainder), none below 0."""
    out = list(counts)
    diff = total - sum(out)
    if diff == 0 or not out:
        return out
    if diff > 0 and min(weights) == max(weights) and weights[0] > 0:  # equal weights: the same result, directly
        base, extra = divmod(diff, len(out))
        if not extra:
            return [c + base for c in out]
        return [c + base + (1 if i < extra else 0) for i, c in enumerate(out)]
    w = list(weights) if diff > 0 else [float(c) for c in out]  # removing: in proportion to what each has
    if sum(w) <= 0:
        w = [1.0] * len(out)
    amount = abs(diff)
    quotas = [amount * x / sum(w) for x in w]
    shares = [int(q) for q in quotas]
    order = sorted(range(len(out)), key=lambda i: (quotas[i] - shares[i], w[i]), reverse=True)
    for i in order[: amount - sum(shares)]:
        shares[i] += 1
    sign = 1 if diff > 0 else -1
    out = [c + sign * s for c, s in zip(out, shares, strict=True)]
    assert min(out) >= 0 and sum(out) == total, (out, total)
    return out


def at_least_one(counts: Sequence[int], texts: Sequence[str]) -> list[int]:
    """`counts` with every chunk that has text given >= 1 token, each taken from the nearest chunk after it
    holding more than one (else the nearest before it); earlier chunks first, as far as the total allows."""
    out = list(counts)
    for i, (c, text) in enumerate(zip(out, texts, strict=True)):
        if c or not text:
            continue
        donor = next((j for j in range(i + 1, len(out)) if out[j] > 1), None)
        if donor is None:
            donor = next((j for j in range(i - 1, -1, -1) if out[j] > 1), None)
        if donor is None:
            break  # fewer tokens than chunks with text: the rest keep 0
        out[donor] -= 1
        out[i] = 1
    return out


def align(texts: Sequence[str], token_ends: list[int]) -> list[int]:
    """Tokens per chunk: each token counts for the chunk holding its last character."""
    bounds: list[int] = []  # end offset of each chunk's text in the whole text
    pos = 0
    for t in texts:
        pos += len(t)
        bounds.append(pos)
    counts = [0] * len(texts)
    for end in token_ends:
        i = bisect.bisect_left(bounds, max(end, 1))  # chunk whose text holds character end-1
        counts[min(i, len(texts) - 1)] += 1
    return counts


class StreamCounter:
    """Feed decoded SSE payloads in arrival order; `finish()` gives the chunks with their settled counts."""

    def __init__(self, endpoint: Literal["completions", "chat"], token_ends: TokenEnds | None = None) -> None:
        self.endpoint = endpoint
        self.token_ends = token_ends
        self.done = False  # saw `data: [DONE]`
        self.finish_reason: str | None = None
        self.usage_mode: UsageMode = "none"
        self.final_total: int | None = None  # server's completion_tokens at the end
        self.n_prompt: int | None = None
        self.source: TokenSource | None = None
        # per content chunk: arrival time, text, the server's cumulative count on it (or None)
        self._events: list[tuple[int, str, int | None]] = []

    def feed_many(self, payloads: list[str], t_ns: int) -> None:
        """Events that arrived together, in order: one JSON parse for all of them where they are plain objects."""
        n = len(payloads)
        if n > 1 and payloads[-1] == "[DONE]":
            self.feed_many(payloads[:-1], t_ns)
            self.feed(payloads[-1], t_ns)
            return
        if n > 1 and not self.done and all(p[:1] == "{" and p[-1:] == "}" for p in payloads):
            try:
                objs = json.loads("[" + ",".join(payloads) + "]")
            except ValueError:
                objs = None  # one of them is malformed: per event below names it
            if objs is not None and len(objs) == n and all(isinstance(o, dict) for o in objs):
                self._apply_all(objs, payloads, t_ns)
                return
        for payload in payloads:
            self.feed(payload, t_ns)

    def feed_read(self, raw: bytes, t_ns: int) -> bool:
        """A whole read of plain `data: {...}` events (the common case): parsed in one go, without the SSE decoder.

        False (and nothing taken) when the read is anything else: comments, other fields, CR line ends,
        an event split across reads, a malformed or unusual event; the caller then feeds it event by event.
        """
        if self.done or not raw.startswith(b"data: {") or not raw.endswith(b"\n\n") or b"\r" in raw:
            return False
        done = raw.endswith(b"data: [DONE]\n\n")
        body = raw[:-14] if done else raw
        if not body.endswith(b"\n\n"):
            return False
        inner = body[6:-2].replace(b"\n\ndata: ", b",")  # "A\n\ndata: B" -> "A,B": a JSON array's items
        if b"\n" in inner:
            return False
        try:
            objs = json_codec.loads(b"[" + inner + b"]")
        except ValueError:  # malformed, or only refused by orjson (NaN, huge ints): the careful path decides
            return False
        if len(objs) != body.count(b"\n\ndata: ") + 1 or not all(type(o) is dict for o in objs):
            return False  # an event that held a comma-joined pair, or no object: the careful path says which
        before = (len(self._events), self.finish_reason, self.usage_mode, self.final_total, self.n_prompt)
        try:
            self._apply_all(objs, None, t_ns)
        except AdapterError:  # undo, so the careful path reports it with the event's own text
            del self._events[before[0]:]
            self.finish_reason, self.usage_mode, self.final_total, self.n_prompt = before[1:]
            return False
        self.done = done
        return True

    def feed(self, payload: str, t_ns: int) -> None:
        """One event's data."""
        if payload.strip() == "[DONE]":
            self.done = True
            return
        if self.done:
            raise AdapterError("stream", f"data after [DONE]: {payload[:120]!r}")
        try:
            obj = json.loads(payload)
        except ValueError as e:
            raise AdapterError("stream", f"malformed JSON in stream ({e}): {payload[:120]!r}") from e
        self._apply(obj, payload, t_ns)

    def _apply(self, obj: Any, payload: str, t_ns: int) -> None:
        self._apply_all([obj], [payload], t_ns)

    def _apply_all(self, objs: list[Any], payloads: list[str] | None, t_ns: int) -> None:
        """Parsed events in arrival order, in one loop (it runs for every event of every request)."""
        events = self._events
        chat = self.endpoint == "chat"
        for k, obj in enumerate(objs):
            payload = payloads[k] if payloads is not None else ""
            if not isinstance(obj, dict):
                raise AdapterError("stream", f"stream event is not a JSON object: {payload[:120]!r}")
            if "error" in obj:
                raise AdapterError("stream", f"server error inside the stream: {str(obj['error'])[:200]}")
            usage = obj.get("usage") or None
            if usage is not None:
                self._read_usage(usage)
            choices = obj.get("choices") or []
            if not choices:
                continue  # usage-only chunk (include_usage) or keep-alive object
            choice = choices[0]
            if not isinstance(choice, dict):
                raise AdapterError("stream", f"stream choice is not an object: {payload[:120]!r}")
            if chat:
                delta = choice.get("delta") or {}
                text = str(delta.get("content") or delta.get("reasoning_content") or "")
            else:
                text = choice.get("text")
                if type(text) is not str:
                    text = str(text or "")
            finish = choice.get("finish_reason")
            if finish:
                self.finish_reason = str(finish)
            cumulative = None
            if usage is not None:
                ct = usage.get("completion_tokens")
                if isinstance(ct, int) and not isinstance(ct, bool):
                    cumulative = ct
                    self.usage_mode = "per_chunk"
            if text or (cumulative is not None and cumulative > self._last_cumulative()):
                events.append((t_ns, text, cumulative))

    def _last_cumulative(self) -> int:
        for _, _, c in reversed(self._events):
            if c is not None:
                return c
        return 0

    def finish(self, max_tokens: int | None = None) -> list[Chunk]:
        """End of a stream that saw [DONE]: every content chunk with its token count (docs/metrics.md).

        Without usage, a `finish_reason` of "length" still tells the total: the request ran to `max_tokens`.
        """
        events = self._events
        if not events:
            raise AdapterError("stream", "stream ended without any output token")
        texts = [e[1] for e in events]
        total = self.final_total
        if total is None and self.finish_reason == "length" and max_tokens is not None:
            total = max_tokens
        cumulative = [e[2] for e in events]
        client = len(self.token_ends("".join(texts))) if self.token_ends is not None else len(texts) - texts.count("")
        overruled = (self.token_ends is not None and total is not None
                     and total - client > max(USAGE_TOLERANCE_TOKENS, USAGE_TOLERANCE_SHARE * client))
        # only a claim of more tokens than the text holds is overruled: that one flatters (more tokens/s, a
        # shorter TPOT); a lower claim stays (a tokenizer that is not the server's also splits text finer) and
        # the console says how far apart they are
        if overruled:
            total, cumulative = client, [None]
        if None not in cumulative:
            counts, prev = [], 0
            for c in cumulative:
                assert c is not None
                counts.append(max(c - prev, 0))
                prev = max(prev, c)
            self.source = "server_per_chunk"
            total = total if total is not None else prev
        elif self.token_ends is not None:
            counts = align(texts, self.token_ends("".join(texts)))
            self.source = "tokenizer_over_usage" if overruled else "tokenizer_aligned"
        elif total is not None:
            counts = [0] * len(texts)
            self.source = "text_proportional"
        else:
            counts = [1 if t else 0 for t in texts]
            self.source = "client_chunks"
        if total is not None:
            counts = spread(counts, total, [float(len(t)) for t in texts])
        if self.source != "server_per_chunk" and 0 in counts:  # the server's own per-chunk counts are kept
            counts = at_least_one(counts, texts)
        if sum(counts) == 0:
            raise AdapterError("stream", "stream ended without any output token (the server counted 0)")
        source = self.source
        chunks: list[Chunk] = []
        append = chunks.append
        # chunks are immutable: consecutive equal ones (the events of one read) share one object
        chunk = Chunk(-1, -1)
        last = len(events) - 1
        for i in range(last):
            t, text, _ = events[i]
            n = counts[i]
            if t != chunk.t_ns or n != chunk.n_tokens or (text or None) != chunk.text:
                chunk = Chunk(t, n, text or None, token_source=source)
            append(chunk)
        t, text, _ = events[last]
        append(Chunk(t, counts[last], text or None, n_prompt=self.n_prompt, n_out_total=total, n_out_client=client,
                     token_source=source))
        return chunks

    @property
    def n_out(self) -> int:
        """Output tokens by the best count available (server total, else the client's)."""
        if self.final_total is not None:
            return self.final_total
        return self._last_cumulative() or sum(1 for e in self._events if e[1])

    def _read_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            raise AdapterError("stream", f"usage is not an object: {str(usage)[:120]!r}")
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if isinstance(pt, int):
            self.n_prompt = pt
        if isinstance(ct, int):
            if ct < 0:
                raise AdapterError("stream", f"usage.completion_tokens is negative: {ct}")
            self.final_total = ct  # the last one seen is the final count
            if self.usage_mode == "none":
                self.usage_mode = "final"
