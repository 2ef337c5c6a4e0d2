"""The `own` and `own-static` adapters through the registry: EngineInfo, exact-length streams, errors."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import psutil
import pytest

import adapters
from adapters.base import AdapterError, RequestSpec


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from model_cache.create import create_model

    return str(create_model("tiny", "tiny", root=tmp_path_factory.mktemp("models")))


async def _run(adapter, reqs):
    async def one(req):
        return [c async for c in adapter.stream(req)]

    return await asyncio.gather(*[one(r) for r in reqs], return_exceptions=True)


@pytest.mark.parametrize("name, batching", [("own", "continuous"), ("own-static", "static")])
def test_start_reports_engine_info_and_streams_exact_lengths(tiny, name, batching) -> None:
    import torch

    threads = torch.get_num_threads()
    adapter = adapters.create(name, tiny, device="cpu", threads=1, max_batch=8)
    try:
        info = adapter.start()
        assert (info.adapter, info.engine, info.batching, info.format) == (name, "own_engine", batching,
                                                                           "hf-safetensors")
        assert info.device == "cpu" and info.precision == "fp32" and info.threads == 1 and info.max_batch == 8
        assert info.vocab_size == 2048 and info.max_model_len == 4096 and info.pid and info.pid != os.getpid()
        assert info.placement["isolated"] and info.placement["engine_threads"] == 1 and info.ready_s > 0
        assert info.extra["model_config"]["hidden_size"] == 128 and info.extra["n_params"] > 0
        if name == "own":
            assert info.extra["kv_blocks_total"] > 0 and info.extra["block_size"] == 16
        # which kernels ran is in the run; where the native ones can't, a note says why
        from own_engine.kernels.backends import native_kernels

        native = not isinstance(native_kernels(), str)
        assert info.extra["linear_kernels"] == ("panel-avx512" if native else "onednn-packed")
        if name == "own":  # own-static has neither: its cache is not paged
            want = ("native", "native") if native else ("sdpa", "torch")
            assert (info.extra["decode_attention"], info.extra["layer_ops"]) == want
        assert bool(info.notes) == (not native)
        reqs = [RequestSpec(f"r{i}", tuple(range(5, 5 + 3 * i + 1)), max_tokens=5 + i) for i in range(4)]
        results = asyncio.run(_run(adapter, reqs))
        for req, chunks in zip(reqs, results, strict=True):
            assert [c.n_tokens for c in chunks] == [1] * req.max_tokens  # one chunk per token, exact length
            assert chunks[0].n_prompt == req.n_in and all(c.n_prompt is None for c in chunks[1:])
            # stamped here on arrival, after the engine's own stamp (one monotonic clock for both processes)
            assert all(c.token_ids is not None and len(c.token_ids) == 1 for c in chunks)
            assert all(c.t_engine_ns is not None and c.t_engine_ns <= c.t_ns for c in chunks)
        stats = adapter.stats()
        assert stats["running"] == 0.0 and stats["waiting"] == 0.0 and "preemptions" in stats
        if name == "own":
            assert stats["kv_blocks_total"] > 0 and stats["kv_blocks_used"] == 0.0
    finally:
        adapter.close()
        torch.set_num_threads(threads)  # `threads` is process-wide in torch: restore it for other tests


def test_refused_and_invalid_requests_become_adapter_errors(tiny) -> None:
    adapter = adapters.create("own", tiny, device="cpu", max_model_len=64)
    adapter.start()
    try:
        too_long = RequestSpec("long", tuple(range(3, 63)), max_tokens=16)
        bad_params = RequestSpec("bad", (5, 6), max_tokens=4, top_p=0.0)
        ok = RequestSpec("ok", (5, 6), max_tokens=4)
        long_res, bad_res, ok_res = asyncio.run(_run(adapter, [too_long, bad_params, ok]))
        assert isinstance(long_res, AdapterError) and long_res.kind == "refused" and "max_model_len" in str(long_res)
        assert isinstance(bad_res, AdapterError) and bad_res.kind == "refused"
        assert sum(c.n_tokens for c in ok_res) == 4
    finally:
        adapter.close()


def test_engine_failure_becomes_an_engine_error(tiny) -> None:
    adapter = adapters.create("own", tiny, device="cpu", isolate=False)  # on this interpreter, to break it
    adapter.start()

    def boom():
        raise RuntimeError("kaput")

    adapter._engine.step = boom
    try:
        [res] = asyncio.run(_run(adapter, [RequestSpec("x", (5,), max_tokens=2)]))
        assert isinstance(res, AdapterError) and res.kind == "engine" and "kaput" in str(res)
    finally:
        adapter.close()


def test_stream_before_start_is_an_error() -> None:
    adapter = adapters.create("own", None)
    [res] = asyncio.run(_run(adapter, [RequestSpec("x", (5,), max_tokens=2)]))
    assert isinstance(res, AdapterError) and "start()" in str(res)


def test_a_killed_engine_process_fails_requests_in_flight_with_its_log(tiny) -> None:
    adapter = adapters.create("own", tiny, device="cpu", threads=1)
    info = adapter.start()

    async def go():
        task = asyncio.ensure_future(_run(adapter, [RequestSpec("x", (5, 6, 7), max_tokens=4000 - 3)]))
        await asyncio.sleep(0.5)
        os.kill(info.pid, signal.SIGKILL)
        return await task

    try:
        [res] = asyncio.run(go())
        assert isinstance(res, AdapterError) and res.kind == "engine" and "engine process" in str(res)
        [again] = asyncio.run(_run(adapter, [RequestSpec("y", (5,), max_tokens=2)]))
        assert isinstance(again, AdapterError) and again.kind == "engine"
    finally:
        adapter.close()


def test_the_engine_process_ends_with_its_client(tiny, tmp_path) -> None:
    """A client killed with SIGKILL cannot close its engine: the engine sees end of file and exits."""
    import subprocess
    import sys

    code = ("import adapters, time, sys; a = adapters.create('own', sys.argv[1], device='cpu', threads=1); "
            "print(a.start().pid, flush=True); time.sleep(60)")
    client = subprocess.Popen([sys.executable, "-c", code, tiny], stdout=subprocess.PIPE, text=True)
    engine_pid = int(client.stdout.readline())
    assert psutil.pid_exists(engine_pid)
    client.kill()
    client.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and psutil.pid_exists(engine_pid) \
            and psutil.Process(engine_pid).status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.2)
    assert not psutil.pid_exists(engine_pid) or psutil.Process(engine_pid).status() == psutil.STATUS_ZOMBIE


def test_engine_info_says_why_the_native_kernels_are_not_used(tiny, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CC", "no-such-compiler-here")
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))  # no kernels built there yet
    adapter = adapters.create("own", tiny, device="cpu", threads=1, max_batch=2)
    try:
        info = adapter.start()
    finally:
        adapter.close()
    assert info.extra["linear_kernels"] == "onednn-packed" and info.extra["decode_attention"] == "sdpa"
    assert info.extra["layer_ops"] == "torch"
    assert len(info.notes) == 1 and "native CPU kernels are not used" in info.notes[0], info.notes


def test_simulated_device_is_served_through_the_engine_process_and_says_it_is_simulated(tiny) -> None:
    adapter = adapters.create("own", tiny, device="sim:h200", max_batch=8)
    try:
        info = adapter.start()
        assert info.device.startswith("sim:h200") and "SIMULATED" in info.device
        assert info.extra["simulated_device"]["name"] == "h200" and any("SIMULATED" in n for n in info.notes)
        reqs = [RequestSpec(f"r{i}", tuple(range(5, 9 + i)), max_tokens=6 + i, ignore_eos=True) for i in range(5)]

        async def main():
            done = await _run(adapter, reqs)
            # abandoned mid-stream: its slot is freed in the engine
            agen = adapter.stream(RequestSpec("gone", (5, 6, 7), max_tokens=2000, ignore_eos=True))
            await agen.__anext__()
            await agen.aclose()
            await asyncio.sleep(0.3)
            return done

        results = asyncio.run(main())
        for req, chunks in zip(reqs, results, strict=True):
            assert [c.n_tokens for c in chunks] == [1] * req.max_tokens
            assert chunks[0].n_prompt == req.n_in and all(c.n_prompt is None for c in chunks[1:])
            assert all(c.t_engine_ns is not None and c.t_engine_ns <= c.t_ns for c in chunks)
        again = asyncio.run(_run(adapter, reqs[:1]))[0]
        assert [c.token_ids for c in again] == [c.token_ids for c in results[0]]  # deterministic tokens
        stats = adapter.stats()
        assert stats["running"] == 0.0 and stats["timed_steps"] > 0 and stats["step_forward_s"] > 0
    finally:
        adapter.close()


def _switches(pid: int) -> int:
    """Voluntary context switches of the process's main thread (the engine process's reader), from the kernel."""
    with open(f"/proc/{pid}/task/{pid}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches line")


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux's /proc")
def test_the_clients_reads_do_not_wake_the_engine_process_reader(tiny) -> None:
    """The engine's reader thread sleeps on the socket the engine thread writes its steps to. Blocked in recv()
    it was woken each time the client read a step (the freed send buffer wakes every sleeper on the socket),
    and took the engine's CPU from the next step; it now waits for input only."""
    adapter = adapters.create("own", tiny, device="sim:h200", max_batch=8)
    try:
        info = adapter.start()
        n = 400
        before = _switches(info.pid)
        (chunks,) = asyncio.run(_run(adapter, [RequestSpec("long", (5, 6, 7), max_tokens=n, ignore_eos=True)]))
        woken = _switches(info.pid) - before
        assert len(chunks) == n
        assert woken < n // 10, f"the reader woke {woken} times for {n} steps sent"
    finally:
        adapter.close()
