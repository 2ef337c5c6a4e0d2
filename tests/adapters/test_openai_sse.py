"""SSE framing and token accounting of the openai adapter, byte by byte."""

from __future__ import annotations

import json

import pytest

from adapters.base import AdapterError, Chunk
from adapters.openai_stream import StreamCounter, align, at_least_one, spread
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


def _counts(c: StreamCounter, events: list[tuple[str, int]]) -> list[Chunk]:
    for payload, t in events:
        c.feed(payload, t)
    c.feed("[DONE]", 99)
    return c.finish()


def test_per_chunk_usage_counts_several_tokens_in_one_chunk():
    c = StreamCounter("completions")
    out = _counts(c, [(_event("ab", 2), 1), (_event("c", 3), 2)])
    assert [x.n_tokens for x in out] == [2, 1] and [x.t_ns for x in out] == [1, 2]
    assert c.usage_mode == "per_chunk" and out[-1].n_out_total == 3 and out[-1].n_prompt == 3
    assert {x.token_source for x in out} == {"server_per_chunk"}


def test_tokenizer_counts_are_aligned_to_the_chunk_where_each_token_ends():
    # tokens "ab|cd|e|fg" over chunks "a", "bcd", "e", "fg": ab and cd end in chunk 1, e in 2, fg in 3
    c = StreamCounter("completions", token_ends=lambda text: [2, 4, 5, 7])
    out = _counts(c, [(_event("a"), 10), (_event("bcd"), 20), (_event("e"), 30), (_event("fg"), 40)])
    # chunk 0 carried text, so the server made a token to send it: it takes one from chunk 1, never 0
    assert [x.n_tokens for x in out] == [1, 1, 1, 1] and [x.t_ns for x in out] == [10, 20, 30, 40]
    assert out[-1].n_out_client == 4 and {x.token_source for x in out} == {"tokenizer_aligned"}


def test_a_chunk_with_text_never_gets_0_tokens():
    assert at_least_one([0, 3, 1], ["a", "b", "c"]) == [1, 2, 1]  # from the nearest chunk after it
    assert at_least_one([2, 1, 0], ["a", "b", "c"]) == [1, 1, 1]  # else from the nearest before it
    assert at_least_one([0, 0, 1], ["", "b", "c"]) == [0, 0, 1]  # a chunk without text may hold none
    assert at_least_one([0, 0, 2], ["a", "b", "c"]) == [1, 0, 1]  # too few tokens: the earliest chunks first


def test_invalid_utf8_in_the_stream_leaves_the_first_token_in_the_first_chunk():
    """A first chunk of invalid UTF-8 (U+FFFD, 3 byte-level tokens under the client's tokenizer) in a stream
    of 1 token per chunk whose usage says 4: removing the 2 extra tokens used to leave a later chunk with 0
    and could leave the first with 0 (its TTFT then moved to the second chunk); every chunk holds 1 now."""
    invalid = bytes([0xFF, 0xFE])  # not UTF-8: decoded as two U+FFFD
    reads = [b'data: {"choices": [{"index": 0, "text": "%b"}]}\n\n' % w for w in (invalid, b" hello", b" big",
                                                                                b" world")]
    reads += [b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}\n\n',
              b"data: [DONE]\n\n"]

    def token_ends(text: str) -> list[int]:  # byte-level BPE: each U+FFFD is 3 tokens, words one each
        assert text.startswith("\ufffd\ufffd")
        return [1, 1, 1, 2, 2, 2] + [text.index(w) + len(w) for w in (" hello", " big", " world")]

    c, d = StreamCounter("completions", token_ends), SSEDecoder()
    for t, raw in enumerate(reads):
        if not (d.idle() and c.feed_read(raw, t)):
            c.feed_many(d.feed(raw), t)
    out = c.finish()
    assert [x.n_tokens for x in out] == [1, 1, 1, 1] and [x.t_ns for x in out] == [0, 1, 2, 3]


def test_final_usage_is_spread_by_text_length_when_there_is_no_tokenizer():
    c = StreamCounter("completions")
    out = _counts(c, [(_event("x" * 4), 10), (_event("y" * 4), 20),
                      (json.dumps({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 8}}), 30)])
    assert [x.n_tokens for x in out] == [4, 4] and [x.t_ns for x in out] == [10, 20]
    assert out[-1].n_out_total == 8 and out[-1].n_out_client == 2 and out[0].token_source == "text_proportional"


def test_no_usage_and_no_tokenizer_counts_one_per_chunk():
    c = StreamCounter("chat")
    chat = [json.dumps({"choices": [{"index": 0, "delta": {"content": t}}]}) for t in ("a", "b", "c")]
    out = _counts(c, [(p, i) for i, p in enumerate(chat)])
    assert [x.n_tokens for x in out] == [1, 1, 1] and out[0].token_source == "client_chunks"


def test_a_residual_is_spread_never_put_on_one_chunk():
    assert spread([1, 1, 1, 1], 8, [1, 1, 1, 1]) == [2, 2, 2, 2]
    assert spread([2, 2, 2, 2], 4, [1, 1, 1, 1]) == [1, 1, 1, 1]
    assert spread([0, 5, 0], 2, [1, 1, 1]) == [0, 2, 0]  # removal follows what each chunk has: never below 0
    out = spread([1] * 10, 13, [1] * 10)
    assert sum(out) == 13 and max(out) == 2 and min(out) == 1
    assert spread([3, 0], 0, [1, 1]) == [0, 0]


def test_align_gives_a_token_that_spans_chunks_to_the_chunk_of_its_last_character():
    assert align(["he", "llo", " wor", "ld"], [5, 11]) == [0, 1, 0, 1]
    assert align(["abc"], [1, 2, 3]) == [3]


@pytest.mark.parametrize("payload", ['{"choices": [', "[1, 2]", '{"error": {"message": "boom"}}'])
def test_bad_events_are_stream_errors(payload):
    with pytest.raises(AdapterError) as info:
        StreamCounter("chat").feed(payload, 0)
    assert info.value.kind == "stream"


def test_a_length_finish_without_usage_fixes_the_total_a_retokenization_would_miss():
    """No usage; the tokenizer finds 3 tokens in text the server made of 2: finish_reason "length" says 2."""
    c = StreamCounter("completions", token_ends=lambda text: [1, 2, 3])
    done = json.dumps({"choices": [{"index": 0, "text": "c", "finish_reason": "length"}]})
    out = _counts(c, [(_event("ab"), 1), (done, 2)])
    c2 = StreamCounter("completions", token_ends=lambda text: [1, 2, 3])
    c2.feed(_event("ab"), 1)
    c2.feed(done, 2)
    c2.feed("[DONE]", 3)
    assert sum(x.n_tokens for x in c2.finish(max_tokens=2)) == 2 and out[-1].n_out_client == 3


def _via_decoder(reads: list[bytes], endpoint: str = "completions"):
    c, d = StreamCounter(endpoint), SSEDecoder()
    for t, raw in enumerate(reads):
        c.feed_many(d.feed(raw), t)
    c.feed_many(d.flush(), len(reads))
    return c


def _via_whole_reads(reads: list[bytes], endpoint: str = "completions"):
    """The adapter's path: a whole read of plain events in one go, anything else through the decoder."""
    c, d = StreamCounter(endpoint), SSEDecoder()
    for t, raw in enumerate(reads):
        if not (d.idle() and c.feed_read(raw, t)):
            c.feed_many(d.feed(raw), t)
    c.feed_many(d.flush(), len(reads))
    return c


def _outcome(make, reads, endpoint="completions"):
    try:
        c = make(reads, endpoint)
        return [(ch.t_ns, ch.n_tokens, ch.text, ch.n_out_total, ch.n_prompt, ch.token_source) for ch in c.finish()], \
            c.done, c.usage_mode
    except AdapterError as e:
        return e.kind, str(e)


def _sse(*payloads: str) -> bytes:
    return b"".join(f"data: {p}\n\n".encode() for p in payloads)


@pytest.mark.parametrize("reads", [
    [_sse(_event(" a"), _event(" b"), _event(" c"), '{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3}}',
          "[DONE]")],  # one read, final usage (the zero-work server)
    [_sse(_event(" a", 1)), _sse(_event(" b", 2)), _sse(_event(" c", 3)), _sse("[DONE]")],  # a read per event
    [_sse(_event(" a"), _event(" b"))[:17], _sse(_event(" a"), _event(" b"))[17:] + _sse("[DONE]")],  # split event
    [b": keep-alive\n\n" + _sse(_event(" a"), "[DONE]")],  # a comment
    [_sse(_event(" a"), '{"error": {"message": "engine died"}}', _event(" b"), "[DONE]")],  # error event
    [_sse(_event(" a"), '{"choices": [', "[DONE]")],  # malformed JSON
    [_sse(_event(" a"), '{"x": 1}, {"y": 2}', "[DONE]")],  # an event that is a comma-joined pair
    [_sse(_event(" a"), "[DONE]"), _sse(_event(" b"))],  # data after [DONE]
    [_sse(_event(" a"), "[1, 2]", "[DONE]")],  # not an object
    [_sse('{"choices": ["x"]}', "[DONE]")],  # a choice that is not an object
])
def test_whole_reads_parsed_in_one_go_give_what_event_by_event_gives(reads):
    assert _outcome(_via_whole_reads, reads) == _outcome(_via_decoder, reads)


def test_whole_reads_of_chat_events_too():
    chat = [json.dumps({"choices": [{"index": 0, "delta": {"content": t}}]}) for t in (" x", " y")]
    reads = [_sse('{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}', *chat, "[DONE]")]
    assert _outcome(_via_whole_reads, reads, "chat") == _outcome(_via_decoder, reads, "chat")
    assert len(_outcome(_via_whole_reads, reads, "chat")[0]) == 2
