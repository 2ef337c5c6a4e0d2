"""Memory fit at the edge: exactly N sequences, then one token more; TP degrees; a model too big says why."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from advisor.sizing.architecture import load_architecture
from advisor.sizing.memory import BYTES_PER_GB, fits_anywhere, memory_fit, tp_degrees
from advisor.sizing.precision import precision

BF16, FP8 = precision("bf16"), precision("fp8")
# the KV share of each engine: how much KV room one more GB of GPU memory buys (reserve.py's figures)
KV_PER_GB = {"vllm": 0.9, "trtllm": 0.9, "own": 0.8}


def _exactly(arch, n: int, isl: int, osl: int, engine: str, tp: int = 1) -> float:
    """A GPU memory (GB) whose KV room holds exactly n sequences of isl + osl tokens."""
    memory = 80.0
    for _ in range(3):  # again once the memory crosses a default's threshold (vLLM's 70 GiB)
        fit = memory_fit(arch, BF16, memory, tp, isl, osl, engine)
        slack_gb = fit.kv_gb_per_gpu - n * fit.tokens_per_sequence * fit.kv_bytes_per_token_per_gpu / 1e9
        memory -= slack_gb * 1e9 / BYTES_PER_GB / KV_PER_GB[engine]  # reported GB are 10^9 bytes, the catalog's GiB
    return memory


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "own"])
def test_exactly_n_sequences_fit_and_one_token_more_fits_one_fewer(engine):
    arch = load_architecture("Llama 3.1 8B")
    memory = _exactly(arch, 5, 1024, 1024, engine)
    assert memory_fit(arch, BF16, memory, 1, 1024, 1024, engine).max_sequences == 5
    longer = memory_fit(arch, BF16, memory, 1, 1025, 1024, engine)  # 2049 tokens: one more 16-token block
    assert (longer.tokens_per_sequence, longer.max_sequences, longer.fits) == (2064, 4, True)
    one_token_less_memory = memory - 131072 / BYTES_PER_GB / KV_PER_GB[engine]  # one token's KV (128 KiB) less room
    assert memory_fit(arch, BF16, one_token_less_memory, 1, 1024, 1024, engine).max_sequences == 4


def test_one_token_more_than_the_one_sequence_that_fits_does_not_fit():
    arch = load_architecture("Llama 3.1 8B")
    memory = _exactly(arch, 1, 100_000, 28_000, "vllm")
    fits = memory_fit(arch, BF16, memory, 1, 100_000, 28_000, "vllm")
    assert fits.fits and fits.max_sequences == 1 and fits.why is None
    over = memory_fit(arch, BF16, memory, 1, 100_001, 28_000, "vllm")
    assert not over.fits and over.max_sequences == 0 and over.tokens_per_sequence == 128_016
    assert over.why is not None and "\n" not in over.why
    assert over.why.startswith("Llama 3.1 8B in bf16 at TP 1 leaves 17 GB of KV cache per GPU under vllm; "
                               "one sequence of 128016 tokens needs 17 GB: use TP 2, or fp8 or fp4")


def test_tp_degrees_split_heads_evenly_and_replicate_kv_heads():
    assert tp_degrees(load_architecture("Llama 3.1 8B")) == (1, 2, 4, 8)  # 32 heads, 8 KV heads
    assert tp_degrees(load_architecture("SmolLM2 135M")) == (1,)  # 9 heads, 3 KV heads
    forty = replace(load_architecture("Llama 3.1 8B"), n_heads=40)
    assert tp_degrees(forty) == (1, 2, 4, 8)  # 40 heads split 8 ways, 8 KV heads
    assert tp_degrees(replace(forty, n_kv_heads=5)) == (1,)  # 5 KV heads split neither 2, 4 nor 8 ways
    assert tp_degrees(replace(forty, n_heads=20, n_kv_heads=20)) == (1, 2, 4)  # 20 heads do not split 8 ways


def test_kv_heads_are_replicated_past_the_kv_head_count():
    qwen = load_architecture("Qwen3 8B")  # 8 KV heads
    two_kv = replace(qwen, n_kv_heads=2)
    per_token = [memory_fit(two_kv, BF16, 80, tp, 1, 1, "vllm").kv_bytes_per_token_per_gpu for tp in (1, 2, 4, 8)]
    assert per_token == [2 * 36 * 2 * 128 * 2, 2 * 36 * 1 * 128 * 2, 2 * 36 * 1 * 128 * 2, 2 * 36 * 1 * 128 * 2]


def test_405b_in_bf16_does_not_fit_8_x_80_gb_and_says_why_in_one_line():
    arch = load_architecture("Llama 3.1 405B")
    bf16 = memory_fit(arch, BF16, 80, 8, 1024, 1024, "vllm")
    assert not bf16.fits and bf16.max_sequences == 0 and bf16.kv_gb_per_gpu == 0
    assert bf16.why is not None and "\n" not in bf16.why
    assert bf16.why.startswith("Llama 3.1 405B in bf16 needs 812 GB of weights (101 GB per GPU at TP 8); "
                               "8 x 80 GB hold ")
    assert bf16.why.endswith("usable for weights and KV cache under vllm: use fp8 or fp4, or a larger GPU")
    fp8 = memory_fit(arch, FP8, 80, 8, 1024, 1024, "vllm")
    assert fp8.fits and fp8.why is None and fp8.max_sequences > 100
    assert fp8.weights_gb_per_gpu == pytest.approx(51.3, abs=0.1)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "own"])
def test_memory_adds_up_and_every_figure_is_finite(engine):
    arch = load_architecture("Qwen3 32B")
    for fit in fits_anywhere(arch, BF16, 141, 4096, 1024, engine):
        figures = (fit.weights_gb_per_gpu, fit.reserve_gb_per_gpu, fit.kv_gb_per_gpu)
        assert all(math.isfinite(x) and x >= 0 for x in figures)
        if fit.fits:
            assert sum(figures) == pytest.approx(141 * BYTES_PER_GB / 1e9)  # the catalog's GB are GiB
            assert fit.notes  # the reserve's parts, in words
    assert [f.tp for f in fits_anywhere(arch, BF16, 141, 4096, 1024, engine)] == [1, 2, 4, 8]


def test_sglang_reserves_what_its_server_args_reserve():
    fit = memory_fit(load_architecture("Llama 3.1 8B"), BF16, 80, 1, 1024, 1024, "sglang")
    # 80 GiB = 81920 MiB > 60 GiB: max(512 + 1.5 x 8192 + 2 x 256 + 128, 10240) = 13440 MiB -> 0.836
    assert "mem_fraction_static 0.836" in fit.notes[0]
    assert fit.reserve_gb_per_gpu == pytest.approx(80 * BYTES_PER_GB / 1e9 * (1 - 0.836))


def test_own_engine_has_no_tensor_parallelism():
    fit = memory_fit(load_architecture("Llama 3.1 8B"), BF16, 80, 2, 1024, 1024, "own")
    assert not fit.fits and fit.why is not None and "one GPU" in fit.why


def test_bad_inputs_are_refused():
    arch = load_architecture("Llama 3.1 8B")
    with pytest.raises(ValueError, match="tp 3"):
        memory_fit(arch, BF16, 80, 3, 1, 1, "vllm")
    with pytest.raises(ValueError, match="unknown engine 'tgi': choose one of vllm, sglang, trtllm, own"):
        memory_fit(arch, BF16, 80, 1, 1, 1, "tgi")
