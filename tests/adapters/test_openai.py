"""The openai adapter against a misbehaving mock server: counts, error kinds, API-key hygiene."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import pytest

import adapters
from adapters.base import AdapterError, Chunk, EngineUnavailable, RequestSpec
from adapters.openai import OpenAIAdapter, base_url, public_url
from tests.adapters.formats.models import tiny_model
from tests.servers.mock_openai import MockOpenAIServer, free_port


def _req(n_out: int = 8, **kw: object) -> RequestSpec:
    return RequestSpec(request_id="r1", prompt_ids=(1, 2, 3, 4), max_tokens=n_out, prompt_text="a b c d", **kw)


def _run(adapter: OpenAIAdapter, req: RequestSpec) -> list[Chunk]:
    async def go() -> list[Chunk]:
        try:
            return [c async for c in adapter.stream(req)]
        finally:
            await adapter.aclose()
    return asyncio.run(go())


def _error(adapter: OpenAIAdapter, req: RequestSpec | None = None) -> AdapterError:
    with pytest.raises(AdapterError) as info:
        _run(adapter, req or _req())
    return info.value


@pytest.fixture()
def server():
    with MockOpenAIServer() as srv:
        yield srv


def _openai(model: str | None = "mock-model", **kw: object) -> OpenAIAdapter:
    a = adapters.create("openai", model, **kw)
    assert isinstance(a, OpenAIAdapter)
    return a


def _adapter(srv: MockOpenAIServer, **kw: object) -> OpenAIAdapter:
    """Started against a well-behaved server (the warm-up is a real request), then `srv.mode` may change."""
    mode, srv.mode = srv.mode, "ok"
    a = _openai(url=srv.url + "/v1", **kw)
    a.start()
    srv.mode = mode
    return a


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
@pytest.mark.parametrize("usage", ["per_chunk", "final", "none"])
def test_counts_every_token_whatever_the_server_reports(server, endpoint, usage):
    server.usage = usage
    # the chat endpoint takes text only: without a tokenizer advisor could not send the benchmark's token ids
    tok = str(tiny_model()) if endpoint == "chat" else None
    chunks = _run(_adapter(server, endpoint=endpoint, tokenizer=tok), _req(8))
    assert len(chunks) == 8
    assert [c.text for c in chunks] == [f" t{i}" for i in range(8)]
    if usage != "none" or tok is None:
        assert all(c.n_tokens == 1 for c in chunks)
    if tok is None:
        assert chunks[-1].n_out_client == 8
    assert chunks[-1].n_out_total == 8  # without usage, finish_reason "length" says the request ran to max_tokens
    assert chunks[-1].n_prompt == (None if usage == "none" else 4)
    assert all(a.t_ns <= b.t_ns for a, b in zip(chunks, chunks[1:], strict=False))


def test_request_asks_for_usage_exact_length_and_sends_token_ids(server):
    _run(_adapter(server), _req(5, seed=7))
    body = server.requests[-1]["body"]
    assert body["prompt"] == [1, 2, 3, 4] and body["model"] == "mock-model"
    assert body["stream"] is True and body["stream_options"]["include_usage"] is True
    assert body["ignore_eos"] is True and body["min_tokens"] == 5 and body["max_tokens"] == 5 and body["seed"] == 7


def test_start_reports_server_without_credentials(server):
    a = _openai(url=server.url.replace("http://", "http://user:pw@"))
    info = a.start()
    assert info.adapter == "openai" and info.format == "server" and info.version == "9.9.9"
    assert info.device == server.url and "pw" not in repr(info)
    assert info.max_model_len == 2048


def test_final_usage_wins_over_the_tokenizer_and_is_spread_not_dumped(server):
    """The tokenizer says 2 tokens a chunk, the server's final usage says 6 in all: counts follow the server."""
    server.usage = "final"
    a = _adapter(server)
    a._tok = object()  # any tokenizer: `_token_ends` below stands in for it
    a._token_ends = lambda text: [3 * (i + 1) - 1 for i in range(len(text) // 3)] * 2  # type: ignore[method-assign]
    chunks = _run(a, _req(6))
    assert [c.n_tokens for c in chunks] == [1] * 6 and chunks[-1].n_out_client == 12
    assert {c.token_source for c in chunks} == {"tokenizer_aligned"}


@pytest.mark.parametrize(("mode", "kind"), [
    ("429", "http_429"), ("500", "http_5xx"), ("400", "http_4xx"), ("drop", "connection"),
    ("malformed", "stream"), ("no_done", "stream"), ("no_tokens", "stream"), ("error_event", "stream"),
])
def test_failures_become_errors_of_the_right_kind(server, mode, kind):
    server.mode = mode
    err = _error(_adapter(server))
    assert err.kind == kind, str(err)
    if mode.isdigit():
        assert mode in str(err) and "mock failure" in str(err)


def test_refused_connection_is_a_connection_error(server):
    a = _adapter(server)
    a.url = f"http://127.0.0.1:{free_port()}"
    assert _error(a).kind == "connection"


def test_slow_first_byte_hits_the_per_request_timeout(server):
    server.mode, server.slow_s = "slow", 1.0
    err = _error(_adapter(server, timeout_s=0.3))
    assert err.kind == "timeout"


def test_split_events_crlf_and_comments_are_parsed(server):
    server.mode = "split"
    chunks = _run(_adapter(server), _req(4))
    assert [c.n_tokens for c in chunks] == [1, 1, 1, 1] and chunks[-1].n_out_total == 4


def test_falls_back_to_text_when_server_rejects_token_ids(server):
    server.mode = "reject_ids"
    a = _adapter(server)
    chunks = _run(a, _req(3))
    assert len(chunks) == 3 and server.requests[-1]["body"]["prompt"] == "a b c d"
    assert not a.shape.send_ids and any("token-id" in n for n in a.notes)


def test_drops_length_controls_the_server_rejects_and_says_so(server):
    server.mode = "reject_extras"
    a = _adapter(server)
    assert len(_run(a, _req(3))) == 3
    assert "ignore_eos" not in server.requests[-1]["body"]
    assert any("not enforced" in n for n in a.notes)


def test_strict_server_keeps_final_usage_without_per_chunk_usage(server):
    server.mode, server.usage = "strict_stream_options", "final"
    a = _adapter(server)
    chunks = _run(a, _req(4))
    assert server.requests[-1]["body"]["stream_options"] == {"include_usage": True}
    assert chunks[-1].n_out_total == 4 and set(a.usage_modes) == {"final"}
    assert any("continuous_usage_stats" in n for n in a.notes)


def test_an_ordinary_400_is_not_mistaken_for_a_refused_field(server):
    server.mode = "too_long"
    a = _adapter(server)
    err = _error(a)
    assert err.kind == "http_4xx" and "maximum context length" in str(err)
    assert len(server.requests) == 3 and a.shape.send_ids and a.shape.send_length_controls and not a.notes


def test_a_server_that_does_not_stream_is_a_stream_error(server):
    server.mode = "json_body"
    err = _error(_adapter(server))
    assert err.kind == "stream" and "not an event stream" in str(err)


def test_output_shorter_than_asked_is_counted(server):
    server.mode = "stop_early"
    a = _adapter(server)
    chunks = _run(a, _req(8))
    assert sum(c.n_tokens for c in chunks) == 4 and a.short_requests == 1


def test_api_key_is_sent_but_never_stored_or_echoed(server, monkeypatch):
    secret = "sk-test-SECRET-123"
    monkeypatch.setenv("ADVISOR_TEST_KEY", secret)
    a = _adapter(server, api_key_env="ADVISOR_TEST_KEY")
    info = a.start()
    _run(a, _req(2))
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {secret}"
    assert secret not in repr(info) and secret not in repr(vars(a))
    server.mode = "400"  # the mock echoes the Authorization header in its error body
    err = _error(a)
    assert "mock failure" in str(err) and secret not in str(err)


def test_url_credentials_become_basic_auth_and_are_redacted(server):
    a = _openai(url=server.url.replace("http://", "http://alice:hunter22@"))
    a.start()
    _run(a, _req(2))
    assert server.requests[-1]["headers"]["Authorization"].startswith("Basic ")
    server.mode = "400"
    err = _error(a)
    token = server.requests[-1]["headers"]["Authorization"].split()[1]
    assert "hunter22" not in str(err) and token not in str(err) and "mock failure" in str(err)


def test_text_prompt_needed_without_text_or_tokenizer_is_refused(server):
    with pytest.raises(EngineUnavailable, match="warm-up.*--opt tokenizer=") as err:
        _adapter(server, endpoint="chat")  # found by the preflight, before anything is measured
    assert "refused" in str(err.value)
    a = _adapter(server, endpoint="chat", tokenizer=str(tiny_model()))
    a._tok = None
    err2 = _error(a, RequestSpec(request_id="x", prompt_ids=(1, 2), max_tokens=2))
    assert err2.kind == "refused" and "tokenizer" in str(err2)


def test_many_concurrent_streams_share_one_pool(server):
    a = _adapter(server)

    async def go() -> list[int]:
        async def one() -> int:
            return sum([c.n_tokens async for c in a.stream(_req(4))])
        try:
            return await asyncio.gather(*[one() for _ in range(200)])
        finally:
            await a.aclose()
    assert asyncio.run(go()) == [4] * 200


def test_unreachable_server_says_how_to_fix():
    with pytest.raises(EngineUnavailable, match="launch="):
        _openai("m", url=f"http://127.0.0.1:{free_port()}").start()


def test_managed_launch_starts_logs_and_stops_the_server(tmp_path):
    port = free_port()
    cmd = (f"MOCK_MODE=ok {sys.executable} -c \"import sys,time; from tests.servers.mock_openai import MockOpenAIServer; "
           f"s=MockOpenAIServer(); s.port={port}; s.url='http://127.0.0.1:{port}'; s.__enter__(); "
           "print('mock up', flush=True); time.sleep(60)\"")
    a = _openai(url=f"http://127.0.0.1:{port}", launch=cmd, log_dir=str(tmp_path), health_timeout_s=30)
    info = a.start()
    try:
        assert info.pid is not None and info.extra["server_log"] == str(tmp_path / "server.log")
        assert sum(c.n_tokens for c in _run(a, _req(3))) == 3
    finally:
        a.close()
    assert "mock up" in (tmp_path / "server.log").read_text()
    with pytest.raises(EngineUnavailable):
        _openai(url=f"http://127.0.0.1:{port}").start()


def _mock_launch(port: int, mode: str = "ok") -> str:
    return (f"{sys.executable} -c \"import sys,time; from tests.servers.mock_openai import MockOpenAIServer; "
            f"s=MockOpenAIServer(mode='{mode}'); s.port={port}; s.url='http://127.0.0.1:{port}'; s.__enter__(); "
            "print('mock up', flush=True); time.sleep(60)\"")


def test_a_launched_servers_temporary_log_folder_is_removed_when_it_stops(tmp_path, monkeypatch):
    # was: every --launch left a /tmp/advisor-server-* folder behind (mkdtemp, never removed)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    port = free_port()
    a = _openai(url=f"http://127.0.0.1:{port}", launch=_mock_launch(port), health_timeout_s=30)
    info = a.start()
    try:
        log = Path(info.extra["server_log"])
        assert log.parent.parent == tmp_path and "mock up" in log.read_text()  # there while a run may copy it
    finally:
        a.close()
    assert not list(tmp_path.glob("advisor-server-*"))


def test_a_launch_failure_keeps_the_log_it_points_to_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EngineUnavailable, match="exited with code 3") as e:
        _openai(url=url, launch=f"{sys.executable} -c \"print('boom'); raise SystemExit(3)\"").start()
    [folder] = tmp_path.glob("advisor-server-*")
    assert str(folder / "server.log") in str(e.value) and "boom" in (folder / "server.log").read_text()
    folder.joinpath("server.log").unlink()
    folder.rmdir()
    with pytest.raises(EngineUnavailable, match="no such program"):
        _openai(url=url, launch="no-such-program-here --port 1").start()
    assert not list(tmp_path.glob("advisor-server-*"))  # the message names no log: nothing kept


def test_a_failed_warm_up_on_a_launched_server_names_its_log_and_keeps_it(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    port = free_port()
    with pytest.raises(EngineUnavailable, match="warm-up") as e:
        _openai(url=f"http://127.0.0.1:{port}", launch=_mock_launch(port, "500"),
                health_timeout_s=30).start()
    [folder] = tmp_path.glob("advisor-server-*")
    assert f"the server's log ({folder / 'server.log'})" in str(e.value)


def test_a_launched_server_that_dies_on_the_warm_up_keeps_and_names_its_log(tmp_path, monkeypatch):
    """It shows as a connection error; the log is the only thing that says why (was: the folder was removed)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    port = free_port()
    with pytest.raises(EngineUnavailable, match="warm-up") as e:
        _openai(url=f"http://127.0.0.1:{port}", launch=_mock_launch(port, "die"), health_timeout_s=30).start()
    [folder] = tmp_path.glob("advisor-server-*")
    assert f"see the server's log ({folder / 'server.log'})" in str(e.value)
    assert "out of memory" in (folder / "server.log").read_text()


def test_url_helpers():
    assert base_url("http://h:1/v1/") == "http://h:1"
    assert public_url("https://u:p@h:8/v1?key=s") == "https://h:8/v1"
    with pytest.raises(ValueError):
        base_url("h:1")
