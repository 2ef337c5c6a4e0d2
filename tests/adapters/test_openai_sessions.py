"""Multi-turn sessions over HTTP: the answer text comes back re-encoded, each session has one `user` id.

The mock server records every body it was sent (ground truth on the server's side) and streams
" t0 t1 ..." as the answer; a word-level tokenizer maps "t<k>" to id k + 1.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest

from adapters.base import RequestSpec
from adapters.openai import OpenAIAdapter
from adapters.openai_request import RequestShape
from advisor.loadgen.drive import drive
from advisor.loadgen.sessions import SessionPrompts
from scenarios.catalog import scenario_from_dict
from scenarios.schedule import build_schedule
from tests.servers.mock_openai import MockOpenAIServer

N_OUT = 5


def _tokenizer(path) -> str:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, **{f"t{i}": i + 1 for i in range(64)}}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    file = path / "tokenizer.json"
    tok.save(str(file))
    return str(file)


def _sessions_over_http(srv: MockOpenAIServer, tokenizer: str | None):
    sc = scenario_from_dict({
        "name": "conv", "description": "multi-turn conversations sent to an OpenAI-style server",
        "workload": {"input": {"dist": "fixed", "value": 7}, "output": {"dist": "fixed", "value": N_OUT}},
        "sessions": {"users": 2, "sessions_per_user": 2, "turns": {"dist": "fixed", "value": 3}, "think_s": 0.0},
        "duration_s": 1})
    sched = build_schedule(sc, seed=1)
    adapter = OpenAIAdapter("mock-model", OpenAIAdapter.Options(url=srv.url, tokenizer=tokenizer))
    info = adapter.start()
    srv.requests.clear()
    prompts = SessionPrompts(sched, 100, token_range=(70, 100), max_model_len=info.max_model_len,
                             encode=adapter.answer_ids)

    async def go():
        try:
            return await drive(adapter, sched, prompts)
        finally:
            await adapter.aclose()
    try:
        res = asyncio.run(go())
    finally:
        adapter.close()
    assert all(r.ok for r in res.records), [r.error for r in res.records]
    by_user = defaultdict(list)
    for req in srv.requests:
        by_user[req["body"]["user"]].append(req["body"]["prompt"])
    return sched, by_user


def test_the_streamed_answer_text_is_re_encoded_into_the_next_prompt(tmp_path):
    with MockOpenAIServer(usage="none") as srv:
        sched, by_user = _sessions_over_http(srv, _tokenizer(tmp_path))
    assert len(by_user) == 4 and all(len(p) == 3 for p in by_user.values())  # one user id per session
    answer = list(range(1, N_OUT + 1))  # " t0 t1 t2 t3 t4" under the tokenizer
    for prompts in by_user.values():
        for prev, cur in zip(prompts, prompts[1:]):
            assert cur[: len(prev) + N_OUT] == prev + answer and len(cur) == len(prev) + N_OUT + 7


def test_without_a_tokenizer_the_answer_is_its_token_count_of_deterministic_filler():
    runs = []
    for _ in range(2):
        with MockOpenAIServer(usage="final") as srv:
            runs.append(_sessions_over_http(srv, None)[1])
    for prompts in runs[0].values():
        for prev, cur in zip(prompts, prompts[1:]):
            assert cur[: len(prev)] == prev and len(cur) == len(prev) + N_OUT + 7
            assert all(70 <= t < 100 for t in cur[len(prev): len(prev) + N_OUT])
    assert runs[0] == runs[1]  # same seed, same messages and the same filler


def test_a_server_that_refuses_the_user_field_gets_requests_without_it():
    shape = RequestShape("completions", "auto")
    req = RequestSpec("r", (1, 2, 3), max_tokens=2, user="conv-s4")
    body = shape.body(req, "m", lambda r: "x")
    assert body["user"] == "conv-s4"
    assert shape.learn(400, "Unrecognized request argument supplied: user", body)
    assert "user" not in shape.body(req, "m", lambda r: "x") and shape.notes
    # an error that names another field drops that one, never the user id
    shape = RequestShape("chat", "auto")
    body = shape.body(req, "m", lambda r: "x")
    assert shape.learn(400, "Unrecognized request argument supplied: ignore_eos (messages[0].role: user)", body)
    assert shape.body(req, "m", lambda r: "x")["user"] == "conv-s4"


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_plain_requests_carry_no_user_field(endpoint):
    body = RequestShape(endpoint, "auto").body(RequestSpec("r", (1, 2), max_tokens=2), "m", lambda r: "x")
    assert "user" not in body
