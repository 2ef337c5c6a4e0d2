"""The KV cache is sized from the model, max_model_len and max_num_seqs, capped by a memory fraction."""

from __future__ import annotations

from types import SimpleNamespace

import psutil
import pytest

from own_engine.core import model_runner
from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.runner_defaults import kv_bytes_per_token
from own_engine.core.sampling_params import SamplingParams

TINY_KV_BYTES_PER_TOKEN = 2 * 2 * 2 * 32 * 4  # K and V, 2 layers, 2 KV heads of 32, fp32


def _available(monkeypatch, n_bytes: int) -> None:
    monkeypatch.setattr(model_runner.psutil, "virtual_memory", lambda: SimpleNamespace(available=n_bytes))


def test_default_cache_holds_max_num_seqs_full_length_sequences(tiny_path) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", max_num_seqs=3, max_model_len=100, block_size=16))
    assert kv_bytes_per_token(engine.model) == TINY_KV_BYTES_PER_TOKEN
    assert engine.num_kv_blocks == 3 * 7  # ceil(100 / 16) blocks per sequence
    d = engine.describe()
    assert d["kv_cache_bytes"] == 21 * 16 * TINY_KV_BYTES_PER_TOKEN
    assert d["max_num_batched_tokens"] == 256 and d["max_num_seqs"] == 3  # the CPU budget (docs/engines.md)


def test_memory_fraction_caps_the_cache(tiny_path, monkeypatch) -> None:
    per_block = 16 * TINY_KV_BYTES_PER_TOKEN
    _available(monkeypatch, 40 * per_block)
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", max_num_seqs=8, max_model_len=100, kv_cache_memory_fraction=0.25))
    assert engine.num_kv_blocks == 10  # a quarter of 40 blocks, fewer than 8 x 7 wanted
    assert engine.generate([[5, 6, 7]], SamplingParams(max_tokens=4, ignore_eos=True))[0]


def test_too_little_memory_for_one_sequence_is_a_clear_error(tiny_path, monkeypatch) -> None:
    _available(monkeypatch, 12 * 16 * TINY_KV_BYTES_PER_TOKEN)
    with pytest.raises(ValueError, match="lower max_model_len or raise kv_cache_memory_fraction"):
        LLMEngine(EngineConfig(tiny_path, device="cpu", max_model_len=100))  # 0.5 x 12 blocks < 7 blocks for one sequence
    with pytest.raises(ValueError, match="kv_cache_memory_fraction must be in"):
        LLMEngine(EngineConfig(tiny_path, device="cpu", kv_cache_memory_fraction=1.5))


def test_explicit_size_and_budget_checks(tiny_path) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", kv_cache_gb=1 / 1024))
    assert engine.num_kv_blocks == 2**20 // (16 * TINY_KV_BYTES_PER_TOKEN)
    with pytest.raises(ValueError, match="max_num_batched_tokens"):
        LLMEngine(EngineConfig(tiny_path, device="cpu", max_num_seqs=8, max_num_batched_tokens=4))


def test_cpu_cache_costs_memory_only_for_blocks_in_use(tiny_path) -> None:
    proc = psutil.Process()
    before = proc.memory_info().rss
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", kv_cache_gb=1.0))  # 1 GiB of K and V, allocated but untouched
    assert engine.runner.k_cache.numel() * 4 * 2 >= 2**30 - 2**20
    assert proc.memory_info().rss - before < 200 * 2**20
    assert engine.generate([[5, 6, 7]], SamplingParams(max_tokens=4, ignore_eos=True))[0]
    # the first free block was used and written; once the request finished, its pages went back (Linux) and read zeros
    released = engine.runner.release_blocks.enabled
    assert bool(engine.runner.k_cache[:, 0].abs().sum() > 0) is not released
    assert (engine.runner.release_blocks.num_released_bytes > 0) is released
