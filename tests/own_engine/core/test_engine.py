"""LLMEngine and StaticBatchEngine behaviour: preemption, refusal, stopping rules, sampling, static == continuous."""

from __future__ import annotations

import pytest

from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine, RequestRefused
from own_engine.core.sampling_params import SamplingParams
from own_engine.core.static_engine import StaticBatchEngine
from own_engine.model import reference

PROMPTS = [[5, 6, 7, 8, 9, 100, 200], list(range(300, 330)), [50, 60], list(range(1000, 1013))]
GREEDY = SamplingParams(max_tokens=12, ignore_eos=True)


def test_preemption_by_recompute_keeps_greedy_output(tiny_path) -> None:
    # 10 blocks of 4 tokens cannot hold all four sequences at full length: some must be preempted
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=4, num_kv_blocks=12))
    outs = engine.generate(PROMPTS, GREEDY)
    assert engine.stats()["preemptions"] > 0
    for prompt, out in zip(PROMPTS, outs, strict=True):
        assert out == reference.greedy(tiny_path, prompt, 12)
    s = engine.stats()
    assert s["kv_blocks_used"] == 0 and s["running"] == 0 and s["waiting"] == 0


def test_never_fitting_requests_are_refused_at_add_time(tiny_path) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", max_model_len=64, block_size=4, num_kv_blocks=6))
    with pytest.raises(RequestRefused, match="max_model_len"):
        engine.add_request(list(range(3, 60)), SamplingParams(max_tokens=10))
    with pytest.raises(RequestRefused, match="KV blocks"):
        engine.add_request(list(range(3, 23)), SamplingParams(max_tokens=10))  # 30 tokens > 6 blocks of 4
    with pytest.raises(RequestRefused, match="empty"):
        engine.add_request([], SamplingParams())
    with pytest.raises(RequestRefused, match="vocab"):
        engine.add_request([5, 99999], SamplingParams())
    assert not engine.has_unfinished()


def test_static_mode_output_equals_continuous_mode(tiny_path) -> None:
    params = [SamplingParams(max_tokens=n, ignore_eos=True) for n in (12, 3, 9, 7)]
    cont = LLMEngine(EngineConfig(tiny_path, device="cpu")).generate(PROMPTS, params)
    static = StaticBatchEngine(tiny_path, device="cpu", max_batch_size=3)
    assert static.generate(PROMPTS, params) == cont
    assert [len(o) for o in cont] == [12, 3, 9, 7]
    assert static.max_batch_seen == 3


def test_static_batch_runs_until_its_longest_member(tiny_path) -> None:
    engine = StaticBatchEngine(tiny_path, device="cpu", max_batch_size=8)
    engine.add_request([5, 6], SamplingParams(max_tokens=2, ignore_eos=True))
    engine.add_request([7, 8, 9], SamplingParams(max_tokens=6, ignore_eos=True))
    engine.step()
    late = engine.add_request([10], SamplingParams(max_tokens=1, ignore_eos=True))
    steps = 1
    while engine.batch is not None:
        assert all(seq_id != late for seq_id, _, _ in engine.step())  # the late request waits for the next batch
        steps += 1
    assert steps == 6  # the 2-token member finished at step 2 but the batch ran 6 steps
    [(seq_id, toks, finished)] = engine.step()
    assert seq_id == late and len(toks) == 1 and finished


def test_stopping_rules_eos_min_tokens_and_max_tokens(tiny_path) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu"))
    eos = engine.eos_token_ids[0]
    engine.runner.sampler.eos = []  # let EOS win every step: a model that always wants to stop

    def always_eos(logits, seqs, inner=engine.runner.sampler.__call__):
        logits[:, eos] = 1e9
        for i, s in enumerate(seqs):
            if s.num_completion_tokens < s.params.min_tokens:
                logits[i, eos] = float("-inf")
        return inner(logits, seqs)

    engine.runner.sampler = always_eos
    outs = engine.generate([[5, 6]] * 3, [SamplingParams(max_tokens=8), SamplingParams(max_tokens=8, min_tokens=4),
                                          SamplingParams(max_tokens=8, ignore_eos=True)])
    assert outs[0] == [eos]
    assert len(outs[1]) == 5 and outs[1][-1] == eos and eos not in outs[1][:4]
    assert outs[2] == [eos] * 8


def test_min_tokens_masks_eos_in_the_sampler(tiny_path) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu"))
    eos = engine.eos_token_ids[0]
    params = SamplingParams(temperature=1.0, seed=3, max_tokens=6, min_tokens=6)
    seq_id = engine.add_request([5], params)
    seq = engine.seqs[seq_id]
    import torch

    logits = torch.zeros(1, engine.config.vocab_size)
    logits[0, eos] = 1e9
    assert engine.runner.sampler(logits, [seq]) != [eos]


def test_seeded_sampling_is_reproducible_and_top_k_1_is_greedy(tiny_path) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu"))
    sampled = SamplingParams(temperature=1.0, top_p=0.9, seed=7, max_tokens=10, ignore_eos=True)
    a = engine.generate([[5, 6, 7]], sampled)
    b = engine.generate([[5, 6, 7]], sampled)
    assert a == b
    assert a != engine.generate([[5, 6, 7]], SamplingParams(temperature=1.0, seed=8, max_tokens=10, ignore_eos=True))
    top1 = SamplingParams(temperature=0.8, top_k=1, seed=1, max_tokens=10, ignore_eos=True)
    assert engine.generate([[5, 6, 7]], top1) == engine.generate([[5, 6, 7]], SamplingParams(max_tokens=10,
                                                                                            ignore_eos=True))


@pytest.mark.parametrize("bad", [dict(temperature=-1), dict(top_p=0), dict(top_k=-1), dict(max_tokens=0),
                                 dict(max_tokens=4, min_tokens=5)])
def test_sampling_params_validate(bad) -> None:
    with pytest.raises(ValueError):
        SamplingParams(**bad)


def test_padded_fixed_shape_decode_path_matches_eager(tiny_path) -> None:
    # the CUDA-graph decode path (batch and context padded to buckets, dummy KV block), run eagerly on CPU
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", cuda_graphs=True, max_num_seqs=6, block_size=4, linear_kernels="torch"))
    params = [SamplingParams(max_tokens=n, ignore_eos=True) for n in (12, 3, 9, 7)]
    assert engine.generate(PROMPTS, params) == LLMEngine(EngineConfig(tiny_path, device="cpu")).generate(PROMPTS, params)
    assert engine.runner.graphs is not None and engine.runner.graphs.batch_buckets == [1, 2, 4, 6]


def test_host_long_is_torch_tensor_without_the_walk():
    import torch

    from own_engine.core.host_tensors import host_long

    for values in ([], [7], [3, 1, 2], [[1, 2, 3], [4, 5, 6]], [[0], [9]], [[], []], [2**40, -5]):
        got, want = host_long(values), torch.tensor(values, dtype=torch.long)
        assert got.dtype == torch.long and got.shape == want.shape and torch.equal(got, want)
    with pytest.raises(ValueError):
        host_long([[1, 2], [3]])
