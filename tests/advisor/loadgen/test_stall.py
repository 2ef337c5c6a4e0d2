"""A run waiting on a server that never answers says so on stderr, at a bounded rate; a flowing run says nothing."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import adapters
from adapters.base import Chunk, RequestSpec
from advisor.loadgen.drive import drive
from advisor.loadgen.stall import Stall
from advisor.run.bench import BenchConfig, open_engine, plan, run_bench
from scenarios.overrides import Overrides
from scenarios.types import Schedule, ScheduledRequest, SLOs
from tests.servers.mock_openai import MockOpenAIServer


def _schedule(times: list[float], n_out: int) -> Schedule:
    reqs = tuple(ScheduledRequest(idx=i, t_sched_s=t, n_in=4, n_out=n_out) for i, t in enumerate(times))
    return Schedule(scenario="t", mode="open", requests=reqs, seed=0, slos=SLOs())


class NeverAnswers:
    """An engine that takes every request and never sends a token."""

    async def stream(self, spec: RequestSpec) -> AsyncIterator[Chunk]:
        await asyncio.Event().wait()
        yield Chunk(0, 1)  # never reached: makes this an async generator, as an adapter's stream is


def _run(schedule: Schedule, every_s: float, timeout_s: float, **fake: float) -> tuple[list[Stall], list]:
    adapter: Any = NeverAnswers()
    if fake:
        adapter = adapters.create("fake", None, **fake)
        adapter.start()
    heard: list[Stall] = []

    def spec(i: int) -> RequestSpec:
        return RequestSpec(f"r{i}", (5, 6, 7, 8), max_tokens=schedule.requests[i].n_out,
                           min_tokens=schedule.requests[i].n_out)

    res = asyncio.run(drive(adapter, schedule, spec, timeout_s=timeout_s, on_stall=heard.append,
                            stall_every_s=every_s))
    return heard, res.records


def test_an_engine_that_never_answers_gets_a_line_per_interval_until_the_timeout():
    heard, records = _run(_schedule([0.0, 0.0, 0.0], 4), every_s=0.25, timeout_s=1.2)
    assert all(r.error_kind == "timeout" for r in records)
    assert 2 <= len(heard) <= 4  # at most one per 0.25 s over the 1.2 s they waited
    for i, s in enumerate(heard):
        assert s.n_open == 3 and s.timeout_s == 1.2
        assert s.quiet_s >= 0.25 * (i + 1) - 0.05 and s.oldest_wait_s >= s.quiet_s - 0.05
    assert [s.oldest_wait_s for s in heard] == sorted(s.oldest_wait_s for s in heard)


def test_a_stream_that_keeps_arriving_is_not_a_stall():
    # one long answer: a token every 50 ms for 1.5 s, watched every 0.3 s
    heard, records = _run(_schedule([0.0], 30), every_s=0.3, timeout_s=10.0, ttft_ms=0, tpot_ms=50)
    assert records[0].ok and heard == []


def test_the_line_says_how_many_wait_how_long_and_the_timeout():
    assert Stall(3, 10.2, 42.7, 600.0).text() == ("waiting on 3 requests: nothing has arrived for 10 s; the oldest was "
                                                  "sent 43 s ago (each is given up after --timeout 600 s)")
    assert Stall(1, 10, 10, 5.5).text().startswith("waiting on 1 request: ")


def test_a_hung_server_is_named_on_stderr_and_stdout_stays_clean(tmp_path, capfd):
    # the case: an OpenAI-compatible server that stops answering, and nothing was said until the timeout
    with MockOpenAIServer() as server:
        cfg = BenchConfig(scenario="chat", engine="openai", engine_options={"url": server.url},
                          out_dir=tmp_path / "runs", workers=1, timeout_s=1.0, stall_every_s=0.3,
                          overrides=Overrides(rate_rps=20, duration_s=0.1, warmup_s=0, max_input_tokens=8,
                                              max_output_tokens=4))
        p = plan(cfg)
        with open_engine(cfg, p.options) as adapter:  # started and warmed up while the server still answers
            server.mode, server.slow_s = "slow", 2.0  # past the 1 s timeout
            run = run_bench(replace(cfg), adapter, planned=p)
    out, err = capfd.readouterr()
    assert out == "" and run.summary.n_errors == run.summary.n_requests > 0
    lines = [line for line in err.splitlines() if line.startswith("waiting on ")]
    assert 1 <= len(lines) <= 4 and re.match(r"waiting on \d+ requests?: nothing has arrived for \d+ s; the oldest was "
                                             r"sent \d+ s ago", lines[0])
    assert lines[0].endswith("(each is given up after --timeout 1 s)")
