"""Chunked prefill: prompts cut to a small token budget give the same logits and greedy tokens as whole prompts,
and a long prompt no longer stalls the running decodes."""

from __future__ import annotations

import torch

from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.sampling_params import SamplingParams
from tests.own_engine.conftest import hf_greedy, hf_logits
from tests.own_engine.model.test_correctness import ATOL, LogitRecorder

PROMPTS = {0: list(range(300, 323)), 1: [7, 8, 9], 2: list(range(1000, 1061)), 3: list(range(40, 49))}
JOIN_AT = {0: 0, 1: 0, 2: 2, 3: 4}  # request i is added before engine step JOIN_AT[i]


def _run(engine: LLMEngine, n_out: int) -> dict[int, list[int]]:
    """Add the PROMPTS at their JOIN_AT steps and run to the end; outputs by request index."""
    params = SamplingParams(max_tokens=n_out, ignore_eos=True)
    seq_of: dict[int, int] = {}
    outs: dict[int, list[int]] = {}
    step = 0
    while len(seq_of) < len(PROMPTS) or engine.has_unfinished():
        for i, at in JOIN_AT.items():
            if at == step:
                seq_of[i] = engine.add_request(PROMPTS[i], params)
                outs[seq_of[i]] = []
        for seq_id, toks, _ in engine.step():
            outs[seq_id].extend(toks)
        step += 1
    return {i: outs[seq_of[i]] for i in PROMPTS}


def test_chunked_prefill_matches_whole_prompts_and_transformers(tiny_path, hf_model) -> None:
    # a budget of 8 tokens cuts every prompt but one into chunks, several of them mid-block (block_size 4)
    chunked = LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=4, max_num_seqs=4, max_num_batched_tokens=8))
    rec = LogitRecorder(chunked)
    outs = _run(chunked, 10)
    whole = _run(LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=4, max_num_batched_tokens=4096)), 10)
    assert outs == whole
    assert chunked.num_steps > 61 // 8  # the 61-token prompt alone needs 8 steps of 8 tokens
    seq_ids = sorted({sid for sid, _, _ in rec.rows})
    for i, sid in zip(sorted(PROMPTS), seq_ids, strict=True):
        prompt = PROMPTS[i]
        ref = hf_logits(hf_model, prompt + outs[i])
        rows = [(n, row) for s, n, row in rec.rows if s == sid]
        assert [n for n, _ in rows] == list(range(len(prompt), len(prompt) + 10))
        for n, row in rows:
            torch.testing.assert_close(row, ref[n - 1], atol=ATOL, rtol=0)
        assert outs[i] == hf_greedy(hf_model, prompt, 10), f"request {i}"


def test_a_long_prompt_does_not_stall_running_decodes(tiny_path) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", max_num_seqs=4, max_num_batched_tokens=16))
    running = engine.add_request([5, 6, 7], SamplingParams(max_tokens=40, ignore_eos=True))
    engine.step()  # its prefill and first token
    long = engine.add_request(list(range(100, 300)), SamplingParams(max_tokens=2, ignore_eos=True))
    steps_to_first_token = 0
    while True:
        out = {seq_id: toks for seq_id, toks, _ in engine.step()}
        steps_to_first_token += 1
        assert running in out, "the running sequence missed a step while the long prompt was prefilled"
        if long in out:
            break
    assert steps_to_first_token == -(-200 // 15)  # 15 prompt tokens per step beside the one decode token


def test_preempted_sequence_recomputes_in_chunks(tiny_path) -> None:
    # 24 blocks of 4 tokens hold every prompt but not all four sequences at full length (38 blocks)
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=4, num_kv_blocks=24, max_num_seqs=4,
                       max_num_batched_tokens=8))
    outs = _run(engine, 12)
    assert engine.stats()["preemptions"] > 0
    assert outs == _run(LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=4)), 12)
    assert engine.block_manager.num_used == 0
