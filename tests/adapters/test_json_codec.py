from __future__ import annotations

import json

from adapters import json_codec
from adapters.openai_stream import StreamCounter


def test_round_trip_matches_the_standard_library() -> None:
    body = {"model": "m", "prompt": [1, 2, 3], "temperature": 0.0, "stream": True, "text": "é\u2028x",
            "stream_options": {"include_usage": True}}
    assert json.loads(json_codec.dumps(body)) == body
    assert json_codec.loads(json_codec.dumps(body)) == body


def test_an_event_only_the_standard_library_reads_still_counts() -> None:
    """NaN and integers past 64 bits: the fast path lets go of the read and the careful path takes it."""
    event = {"choices": [{"text": " a", "finish_reason": None, "logprob": float("nan")}]}
    raw = ("data: " + json.dumps(event) + "\n\n" + "data: " + json.dumps({"choices": [], "usage": {
        "prompt_tokens": 2**70, "completion_tokens": 1}}) + "\n\ndata: [DONE]\n\n").encode()
    counter = StreamCounter("completions")
    if json_codec.name() != "json":
        assert not counter.feed_read(raw, 5)
    for payload in raw.decode().split("\n\n"):
        if payload:
            counter.feed(payload.removeprefix("data: "), 5)
    chunks = counter.finish()
    assert [c.n_tokens for c in chunks] == [1] and counter.n_prompt == 2**70
