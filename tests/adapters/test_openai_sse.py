"""SSE framing and token accounting of the openai adapter, byte by byte."""

from __future__ import annotations

import json

import pytest

from adapters.base import AdapterError
from adapters.openai_stream import StreamCounter
from adapters.sse import SSEDecoder


def test_events_split_anywhere_give_the_same_payloads():
    raw = b': hello\r\ndata: {"a":1}\r\n\r\nevent: x\ndata: line1\ndata: line2\n\ndata:[DONE]\r\r'
    whole = SSEDecoder().feed(raw)
    assert whole == ['{"a":1}', "line1\nline2", "[DONE]"]  # no event waits for the next read
    for cut in range(1, len(raw)):
        d = SSEDecoder()
        assert d.feed(raw[:cut]) + d.feed(raw[cut:]) + d.flush() == whole, cut


def test_event_without_final_blank_line_is_pending_and_flushable():
    d = SSEDecoder()
    assert d.feed(b"data: [DONE]") == [] and d.pending()
    assert d.flush() == ["[DONE]"] and not d.pending()


def _event(text: str, usage: int | None = None) -> str:
    e: dict = {"choices": [{"index": 0, "text": text}]}
    if usage is not None:
        e["usage"] = {"prompt_tokens": 3, "completion_tokens": usage}
    return json.dumps(e)


def test_per_chunk_usage_counts_several_tokens_in_one_chunk():
    c = StreamCounter("completions")
    out = [c.feed(_event("ab", 2), 1), c.feed(_event("c", 3), 2), c.feed("[DONE]", 3)]
    last = c.finish()
    assert [x.n_tokens for x in out if x] + [last.n_tokens] == [2, 1]
    assert c.usage_mode == "per_chunk" and last.n_out_total == 3 and last.n_prompt == 3 and last.t_ns == 2


def test_final_usage_moves_no_timestamp_and_fixes_the_total():
    c = StreamCounter("completions", count_text=lambda s: len(s))
    first = [c.feed(_event("x"), 10), c.feed(_event("yy"), 20)]
    c.feed(json.dumps({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5}}), 30)
    c.feed("[DONE]", 40)
    last = c.finish()
    assert first[0] is None and first[1].t_ns == 10 and last.t_ns == 20
    assert first[1].n_tokens + last.n_tokens == 5 and last.n_out_total == 5 and last.n_out_client == 3


@pytest.mark.parametrize("payload", ['{"choices": [', "[1, 2]", '{"error": {"message": "boom"}}'])
def test_bad_events_are_stream_errors(payload):
    with pytest.raises(AdapterError) as info:
        StreamCounter("chat").feed(payload, 0)
    assert info.value.kind == "stream"
