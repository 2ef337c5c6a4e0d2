"""The simulated device (own_engine.core.sim_device) and the step breakdown (own_engine.core.step_clock)."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from own_engine.core.sim_device import PRESETS, SimDeviceError, SimProfile, parse_sim


def test_h200_preset_step_times_are_the_measured_ones() -> None:
    p = parse_sim("sim:h200")
    assert parse_sim("sim") is p is PRESETS["h200"]
    assert p.step_s(1, 0) == pytest.approx(2.2e-3)
    assert p.step_s(8, 0) == pytest.approx(2.43e-3)
    assert p.step_s(64, 0) == pytest.approx(3.4e-3)
    assert p.step_s(36, 0) == pytest.approx((2.43 + (3.4 - 2.43) * 28 / 56) * 1e-3)  # linear between points
    assert p.step_s(256, 0) == pytest.approx(3.4e-3)  # flat past the last point
    assert p.step_s(0, 1024) == pytest.approx(7.6e-3)  # a prefill-only step
    assert p.step_s(8, 512) == pytest.approx((2.43 + 3.8) * 1e-3)  # mixed: decodes plus the chunk's tokens


def test_custom_profile_parses_and_bad_ones_say_how_to_spell_it() -> None:
    p = parse_sim("sim:1=1.0,16=2.0,prefill=4")
    assert p.step_s(16, 0) == pytest.approx(2e-3) and p.step_s(0, 2048) == pytest.approx(8e-3)
    assert parse_sim(p.device) == p
    q = parse_sim("sim:1=1.0,16=2.0,prefill=4,prompt_step=85")  # a fixed time for every step with prompt tokens
    assert q.step_s(16, 0) == pytest.approx(2e-3)  # decode-only steps do not pay it
    assert q.step_s(16, 1024) == pytest.approx((2 + 4 + 85) * 1e-3) and q.step_s(0, 1) == pytest.approx(85.0039e-3)
    assert parse_sim(q.device) == q and q.to_dict()["prompt_step_ms"] == 85
    for bad in ("sim:h100", "sim:1=2", "sim:x=1,prefill=2", "sim:1=-1,prefill=2", "sim:1=1,prefill=2,prompt_step=-1"):
        with pytest.raises(SimDeviceError, match="sim:"):
            parse_sim(bad)
    with pytest.raises(SimDeviceError):
        SimProfile("x", ((8, 1.0), (1, 2.0)), 1.0)


def test_a_step_that_is_not_a_graph_replay_launches_every_op_from_the_host() -> None:
    h200 = parse_sim("sim:h200")
    assert h200.eager_ops == 917
    assert h200.launches(64, 0) == 1  # a decode-only step replays one CUDA graph
    assert h200.launches(8, 512) == 917 and h200.launches(0, 1024) == 917  # a step with a prompt chunk is eager
    assert h200.launches(257, 0) == 917  # past the graphs' largest batch bucket
    custom = parse_sim("sim:1=1.0,prefill=4,ops=50,launch_us=8")
    assert custom.eager_ops == 50 and custom.launch_us == 8
    assert parse_sim(custom.device) == custom and "ops=50,launch_us=8" in custom.spec
    assert parse_sim("sim:1=1.0,prefill=4").launches(0, 1024) == 0  # no ops given: a plain sleep
    for bad in ("sim:1=1.0,prefill=4,ops=-1", "sim:1=1.0,prefill=4,ops=5,launch_us=0"):
        with pytest.raises(SimDeviceError, match="ops"):
            parse_sim(bad)


def test_an_eager_step_launches_its_ops_from_the_host_and_a_graph_replay_one(tiny_path) -> None:
    """The launches are real PyTorch ops (each takes the GIL for its arguments and gives it up inside, which is
    what lets another thread's Python convoy with them; docs/engines.md): counted, not timed."""
    from torch.overrides import TorchFunctionMode

    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams

    class Adds(TorchFunctionMode):
        n = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            if getattr(func, "__name__", "") == "cumsum":  # sim_runner.launch_op
                self.n += 1
            return func(*args, **(kwargs or {}))

    engine = LLMEngine(EngineConfig(tiny_path, device="sim:1=0.1,prefill=0.1,ops=40,launch_us=1", max_num_seqs=8))
    engine.add_request(list(range(5, 40)), SamplingParams(max_tokens=4))
    with Adds() as prefill:
        engine.step()  # the prompt: an eager step
    with Adds() as decode:
        engine.step()  # one decode row: a graph replay
    assert prefill.n == 40 and decode.n == 1


def _cpu_time_of_other_threads_s() -> float:
    """CPU time (user + system) of every thread of this process but the calling one, from /proc."""
    import os
    import threading

    me, total = threading.get_native_id(), 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == me:
            continue
        try:
            fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="counts threads' CPU time from /proc")
def test_a_simulated_launch_runs_on_the_launching_thread_only() -> None:
    """A launch's host work is the launching thread's, at any torch thread count: a launch split over torch's
    pool waits for another CPU, and on a busy machine one step of 917 launches took 0.5 s. The element-wise op
    the simulated launch used before (`torch.add` on 131,072 elements) fails this: its pool threads did about
    half of the work."""
    import torch

    from own_engine.core.sim_runner import _launch_tensors, launch_op

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        a, out = _launch_tensors(5.0)
        a, out = torch.ones(max(a.numel(), 1 << 17)), torch.empty(max(a.numel(), 1 << 17))  # at least add's size
        for _ in range(50):
            launch_op(a, out)
        time.sleep(0.3)  # pool threads still spinning from earlier parallel work go to sleep
        others, mine = _cpu_time_of_other_threads_s(), time.thread_time()
        for _ in range(3000):
            launch_op(a, out)
        others, mine = _cpu_time_of_other_threads_s() - others, time.thread_time() - mine
    finally:
        torch.set_num_threads(before)
    assert mine > 0.05
    assert others < 0.1 * mine, f"other threads took {others:.3f} s of CPU against the launching thread's {mine:.3f} s"


def _engine(tiny_path, **kw):
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine

    return LLMEngine(EngineConfig(tiny_path, device="sim:1=1.0,64=2.0,prefill=8", max_num_seqs=8, **kw))


def test_sim_engine_is_deterministic_never_ends_on_eos_and_says_it_is_simulated(tiny_path) -> None:
    from own_engine.core.sampling_params import SamplingParams

    prompts = [[5, 6, 7, 8], [9, 10, 11, 12, 13, 14], [5, 6, 7, 8]]
    params = SamplingParams(max_tokens=12)  # EOS not ignored: the simulated tokens never are one
    a = _engine(tiny_path).generate(prompts, params)
    b = _engine(tiny_path).generate(prompts, params)
    assert a == b and a[0] == a[2] and a[0] != a[1]
    assert all(len(x) == 12 for x in a)
    d = _engine(tiny_path).describe()
    assert d["device"].startswith("sim:") and "SIMULATED" in d["device"]
    assert d["simulated_device"]["decode_ms"] == [[1, 1.0], [64, 2.0]]


def test_step_breakdown_sums_to_the_step_wall_time_and_forward_is_the_device_time(tiny_path) -> None:
    from own_engine.core.sampling_params import SamplingParams

    engine = _engine(tiny_path, overlap=False)
    for i in range(4):
        engine.add_request([5 + i] * 40, SamplingParams(max_tokens=20, ignore_eos=True))
    outside_ns = 0
    while engine.has_unfinished():
        t = time.perf_counter_ns()
        engine.step()
        outside_ns += time.perf_counter_ns() - t
    s = engine.stats()
    parts = ("host_before", "forward", "forward_overrun", "sample_output", "handoff")
    assert sum(s[f"step_{p}_s"] for p in parts) == pytest.approx(s["step_wall_s"], rel=1e-9, abs=1e-9)
    assert s["timed_steps"] == s["steps"] == 20  # one prefill step of 4 prompts, then 19 decode steps
    # the step's own wall time is what a caller timing step() sees, less the call itself
    assert 0.8 * outside_ns / 1e9 <= s["step_wall_s"] <= outside_ns / 1e9
    # forward = the simulated device's time: 4 x 40 prefill tokens at 8 ms per 1,024, 19 decodes of 4 rows
    device_s = (8 * 160 / 1024 + 19 * (1.0 + 3 / 63)) / 1e3
    assert s["step_forward_s"] == pytest.approx(device_s, rel=1e-3)
    assert s["step_handoff_s"] == 0  # no front: nothing handed on


def test_overlapped_steps_take_the_device_time_and_their_breakdown_still_sums(tiny_path) -> None:
    """With overlap (the simulated device's default) the host's work for a step is done while the step before
    runs: 20 steps take about their device time, and the one call more that only waits for the last is counted."""
    from own_engine.core.sampling_params import SamplingParams

    engine = _engine(tiny_path)
    assert engine.overlap and engine.describe()["overlap"]
    for i in range(4):
        engine.add_request([5 + i] * 40, SamplingParams(max_tokens=20, ignore_eos=True))
    t0 = time.perf_counter()
    n_tokens = sum(len(ids) for _ in range(100) if engine.has_unfinished() for _, ids, _ in engine.step())
    wall_s = time.perf_counter() - t0
    assert n_tokens == 80 and not engine.has_unfinished() and engine.block_manager.num_used == 0
    s = engine.stats()
    parts = ("host_before", "forward", "forward_overrun", "sample_output", "handoff")
    assert sum(s[f"step_{p}_s"] for p in parts) == pytest.approx(s["step_wall_s"], rel=1e-9, abs=1e-9)
    assert s["steps"] == 20 and s["timed_steps"] == 21
    device_s = (8 * 160 / 1024 + 19 * (1.0 + 3 / 63)) / 1e3
    assert device_s <= wall_s  # the device's time is never hidden, only the host's


def test_served_step_counts_its_handoff_to_the_front(tiny_path) -> None:
    from own_engine.core.async_engine import AsyncLLMEngine
    from own_engine.core.sampling_params import SamplingParams

    front = AsyncLLMEngine(factory=lambda: _engine(tiny_path))

    async def one(i: int) -> int:
        n = 0
        async for _, ids in front.generate([5 + i] * 10, SamplingParams(max_tokens=16, ignore_eos=True)):
            n += len(ids)
        return n

    async def main() -> list[int]:
        return await asyncio.gather(*(one(i) for i in range(3)))

    try:
        assert asyncio.run(main()) == [16, 16, 16]
        time.sleep(0.05)
        s = front.stats()
    finally:
        front.close()
    parts = ("host_before", "forward", "forward_overrun", "sample_output", "handoff")
    assert s["step_handoff_s"] > 0 and s["timed_steps"] >= 15  # the gauges are read before the last hand-off
    assert sum(s[f"step_{p}_s"] for p in parts) == pytest.approx(s["step_wall_s"], rel=1e-9, abs=1e-9)
    assert 0 <= s["step_off_cpu_s"] <= s["step_wall_s"]


@pytest.mark.parametrize("overlap", [False, True])
def test_a_step_that_carries_a_prefill_chunk_stays_under_its_budget(tiny_path, overlap) -> None:
    """The ITL bound: running decodes get a token every step, and a step carrying a prompt's chunk is no longer
    than one step of a full budget on the simulated device, however long the prompts that arrive."""
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams

    engine = LLMEngine(EngineConfig(tiny_path, device="sim:h200", max_num_seqs=8, overlap=overlap))
    budget = engine.max_num_batched_tokens
    assert budget == 2048  # the GPU policy (docs/engines.md, "Prefill chunks")
    steps = []
    name = "launch" if overlap else "run"
    run = getattr(engine.runner, name)

    def record(batch):
        nd = batch.num_decodes
        cut = sum(1 for s, n in zip(batch.seqs[nd:], batch.num_new_tokens[nd:], strict=True)
                  if s.num_computed_tokens + n < len(s))  # chunks that leave their prompt unfinished
        steps.append((nd, list(batch.num_new_tokens[nd:]), [s.seq_id for s in batch.seqs], cut))
        return run(batch)

    setattr(engine.runner, name, record)
    decoding = [engine.add_request([5 + i] * 8, SamplingParams(max_tokens=200, ignore_eos=True)) for i in range(5)]
    engine.step()  # their prefills
    for n in (1500, 300, 3500):  # three prompts arrive together while five sequences decode
        engine.add_request([7] * n, SamplingParams(max_tokens=4, ignore_eos=True))
    steps.clear()
    for _ in range(12):
        engine.step()
    p = engine.runner.profile
    bound_s = p.step_s(8, budget)
    assert any(chunks for _, chunks, _, _ in steps) and any(cut for *_, cut in steps)
    for nd, chunks, ids, cut in steps:
        assert nd + sum(chunks) <= budget
        assert cut <= 1  # one prompt at most is partly prefilled
        assert set(decoding) <= set(ids)  # no running decode skipped a step
        assert p.step_s(nd, sum(chunks)) <= bound_s
    assert sum(sum(c) for _, c, _, _ in steps) >= 5300 - 3  # the three prompts were prefilled, chunk by chunk
