"""Overlap scheduling (EngineConfig(overlap=True), Scheduler.advance/resolve): step n+1 is scheduled and launched
before step n's tokens are known. It must give exactly the tokens of the plain step loop, stop at an EOS it only
learns about a step late, survive preemption and aborts, and free every KV block."""

from __future__ import annotations

import random

import pytest

from own_engine.core.sampling_params import SamplingParams

SIM = "sim:1=0.2,64=0.4,prefill=1"  # short steps: these tests are about order, not time


def _engine(tiny_path, overlap: bool, **kw):
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine

    return LLMEngine(EngineConfig(tiny_path, device=SIM, overlap=overlap, **kw))


def _workload(n: int, seed: int = 0) -> tuple[list[list[int]], list[SamplingParams]]:
    rng = random.Random(seed)
    prompts = [[rng.randrange(3, 250) for _ in range(rng.randrange(1, 90))] for _ in range(n)]
    params = [SamplingParams(max_tokens=rng.randrange(5, 30), min_tokens=rng.choice([0, 0, 4, 5])) for _ in range(n)]
    return prompts, params


def _stop_at_eos(engine, every: int) -> None:
    """Make the simulated device sample EOS at some positions (it never does on its own): a sequence whose first
    prompt token is divisible by `every` gets EOS as its 4th completion token."""
    runner, eos = engine.runner, engine.eos_token_ids[0]
    plain = runner.token_at

    def token_at(seq, i):
        if seq.token_ids[0] % every == 0 and i == seq.num_prompt_tokens + 3:
            return eos
        return plain(seq, i)

    runner.token_at = token_at


@pytest.mark.parametrize("kw", [{}, {"max_num_seqs": 4, "max_num_batched_tokens": 32},
                                {"max_num_seqs": 8, "num_kv_blocks": 40, "block_size": 4}],
                         ids=["default", "chunked", "preempting"])
def test_overlap_gives_the_plain_loops_tokens_and_frees_every_block(tiny_path, kw) -> None:
    prompts, params = _workload(40)
    out = {}
    for overlap in (False, True):
        engine = _engine(tiny_path, overlap, **kw)
        _stop_at_eos(engine, every=3)
        out[overlap] = engine.generate(prompts, params)
        assert engine.block_manager.num_used == 0 and not engine.has_unfinished()
        if "num_kv_blocks" in kw:
            assert engine.scheduler.num_preemptions > 0  # the case it exercises
    assert out[True] == out[False]
    eos = engine.eos_token_ids[0]
    n_stopped = 0
    for p, sp, o in zip(prompts, params, out[True], strict=True):
        if p[0] % 3 == 0 and sp.min_tokens in (0, 4):  # EOS as the 4th token: the sequence ends there
            assert len(o) == 4 and o[-1] == eos
            n_stopped += 1
        else:  # no EOS, or one inside min_tokens (which a real model's sampler masks): on to max_tokens
            assert len(o) == sp.max_tokens
    assert n_stopped >= 3


def test_the_next_step_is_launched_before_the_last_ones_tokens_are_awaited(tiny_path) -> None:
    engine = _engine(tiny_path, True, max_num_seqs=4)
    events: list[str] = []
    launch = engine.runner.launch

    def record(batch):
        step = launch(batch)
        k = sum(e.startswith("launch") for e in events)
        events.append(f"launch {k}")
        result = step.result

        def waited():
            events.append(f"result {k}")
            return result()

        object.__setattr__(step, "result", waited)
        return step

    engine.runner.launch = record
    engine.generate([[5, 6, 7]] * 3, SamplingParams(max_tokens=6, ignore_eos=True))
    n = sum(e.startswith("launch") for e in events)
    assert n >= 6
    # launch 0, launch 1, result 0, launch 2, result 1, ...: step k+1 is on its way before step k is awaited
    assert events == ["launch 0"] + [e for k in range(n - 1) for e in (f"launch {k + 1}", f"result {k}")] + \
        [f"result {n - 1}"]


def test_a_request_aborted_while_its_step_runs_gets_nothing_more_and_frees_its_blocks(tiny_path) -> None:
    engine = _engine(tiny_path, True)
    keep = engine.add_request([5] * 20, SamplingParams(max_tokens=8, ignore_eos=True))
    gone = engine.add_request([6] * 20, SamplingParams(max_tokens=8, ignore_eos=True))
    seen: dict[int, int] = {keep: 0, gone: 0}
    for _ in range(3):
        for seq_id, ids, _ in engine.step():
            seen[seq_id] += len(ids)
    engine.abort(gone)  # its next step is already launched
    before = seen[gone]
    while engine.has_unfinished():
        for seq_id, ids, _ in engine.step():
            seen[seq_id] += len(ids)
    assert seen[gone] == before and seen[keep] == 8
    assert engine.block_manager.num_used == 0


@pytest.mark.parametrize("route", ["default", "graphs"])
def test_the_real_model_gives_the_same_tokens_with_overlap(tiny_path, route) -> None:
    """On CPU the model runner's overlap path (decode inputs taken from the last step's sampled ids on the device,
    sampling without `.tolist()`) runs the same code a GPU would, synchronously: greedy and seeded sampled tokens
    must equal the plain loop's, through chunked prefill, preemption and the CUDA graphs' padded route (run
    eagerly here)."""
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine

    rng = random.Random(1)
    prompts = [[rng.randrange(3, 250) for _ in range(rng.randrange(1, 60))] for _ in range(12)]
    params = [SamplingParams(max_tokens=rng.randrange(2, 16)) for _ in range(9)] + \
        [SamplingParams(max_tokens=10, temperature=0.8, top_k=20, seed=s) for s in range(3)]
    kw = {"max_num_seqs": 4, "max_num_batched_tokens": 24, "num_kv_blocks": 24, "block_size": 4,
          "cuda_graphs": route == "graphs", "linear_kernels": "torch" if route == "graphs" else "auto"}
    out = {}
    for overlap in (False, True):
        engine = LLMEngine(EngineConfig(tiny_path, device="cpu", overlap=overlap, **kw))
        assert engine.overlap is overlap
        out[overlap] = engine.generate(prompts, params)
        assert engine.block_manager.num_used == 0 and engine.scheduler.num_preemptions > 0
    assert out[True] == out[False]
    assert LLMEngine(EngineConfig(tiny_path, device="cpu")).overlap is False  # the default off the simulated device


def test_the_real_model_stops_at_an_eos_it_samples_as_the_plain_loop_does(tiny_path) -> None:
    """The tiny model's random weights never pick its real EOS, so the tokens it picks in the most sequences are
    made the EOS ids of both engines: sequences then end on it, learned a step late with overlap, and min_tokens must mask
    it on the device (`Sampler.on_device`) exactly where the plain loop masks it."""
    from collections import Counter

    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine

    rng = random.Random(2)
    prompts = [[rng.randrange(3, 250) for _ in range(rng.randrange(2, 40))] for _ in range(16)]
    free = LLMEngine(EngineConfig(tiny_path, device="cpu")).generate(prompts, SamplingParams(max_tokens=24, ignore_eos=True))
    eos = {t for t, _ in Counter(t for o in free for t in set(o[1:])).most_common(8)}  # in the most sequences
    params = [SamplingParams(max_tokens=24, min_tokens=m) for m in (0, 0, 2, 5) * 4]
    out = {}
    for overlap in (False, True):
        engine = LLMEngine(EngineConfig(tiny_path, device="cpu", overlap=overlap, max_num_seqs=6, max_num_batched_tokens=30))
        engine.scheduler.eos_token_ids = frozenset(eos)
        engine.runner.sampler.eos = sorted(eos)
        out[overlap] = engine.generate(prompts, params)
        assert engine.block_manager.num_used == 0
    assert out[True] == out[False]
    ended = [(o, p) for o, p in zip(out[True], params, strict=True) if len(o) < p.max_tokens]
    assert len(ended) >= 4 and all(o[-1] in eos and not eos & set(o[:-1]) and len(o) > p.min_tokens
                                   for o, p in ended)
    assert any(eos & set(o[: p.min_tokens]) for o, p in zip(free, params, strict=True) if p.min_tokens), \
        "no sequence would have sampled the EOS inside its min_tokens: the masking is not exercised"


def test_an_eos_learned_after_its_sequence_was_preempted_ends_it_in_the_queue() -> None:
    """Step n preempts a sequence whose token from step n-1 is still on its way; that token is an EOS: the
    sequence must end, not wait to be recomputed and run on past its EOS."""
    from own_engine.core.block_manager import BlockManager
    from own_engine.core.scheduler import PLACEHOLDER, Scheduler
    from own_engine.core.sequence import Sequence, SequenceStatus

    sched = Scheduler(BlockManager(16, 4), max_num_seqs=4, max_num_batched_tokens=64, max_model_len=64,
                      eos_token_ids=(2,))
    seq = Sequence([5, 6, 7], SamplingParams(max_tokens=10))
    sched.add(seq)
    rows = sched.advance(sched.schedule())  # its prompt, launched: the first token is a placeholder
    assert rows == [(seq, 3)] and seq.token_ids[-1] == PLACEHOLDER
    sched.preempt(seq)  # the next step's schedule needed its blocks
    assert seq.status is SequenceStatus.WAITING
    assert sched.resolve(rows, [2]) == [(seq, 2, True)]
    assert seq.is_finished and seq not in sched.waiting and not sched.has_unfinished()
    assert seq.token_ids == [5, 6, 7, 2]
