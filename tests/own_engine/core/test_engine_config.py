"""EngineConfig (own_engine.core.engine_config): a bad value is a ValueError naming the field and its valid
range when the config is made, before any model is looked for or loaded."""

from __future__ import annotations

import dataclasses

import pytest

from own_engine.core.engine_config import EngineConfig
from own_engine.core.sim_device import SimDeviceError

NO_MODEL = "/nonexistent/model"  # validation never reads the model: a bad value fails first


@pytest.mark.parametrize(("field", "value", "message"), [
    ("max_num_seqs", 0, "max_num_seqs must be >= 1, got 0"),
    ("block_size", -4, "block_size must be >= 1, got -4"),
    ("max_model_len", 0, "max_model_len must be >= 1"),
    ("num_kv_blocks", 0, "num_kv_blocks must be >= 1"),
    ("threads", 0, "threads must be >= 1"),
    ("max_num_batched_tokens", 8, r"max_num_batched_tokens \(8\) must be >= max_num_seqs \(64\)"),
    ("kv_cache_gb", 0.0, "kv_cache_gb must be > 0"),
    ("kv_cache_memory_fraction", 1.5, r"kv_cache_memory_fraction must be in \(0, 1\], got 1.5"),
    ("kv_cache_memory_fraction", 0.0, r"kv_cache_memory_fraction must be in \(0, 1\], got 0.0"),
    ("dtype", "fp8", "unknown dtype 'fp8'; choose auto, float32"),
    ("linear_kernels", "fast", "linear_kernels must be one of auto, panel, onednn, torch, got 'fast'"),
    ("decode_attention", "flash", "decode_attention must be 'sdpa' or 'triton', got 'flash'"),
    ("device", "tpu:0", "unknown device 'tpu:0'; use auto, cpu, cuda, cuda:N or sim:PROFILE"),
])
def test_a_bad_value_names_the_field_and_its_range(field, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        EngineConfig(NO_MODEL, **{field: value})


def test_a_misspelt_simulated_device_shows_the_spelling() -> None:
    with pytest.raises(SimDeviceError, match="unknown simulated device 'sim:h100'; use sim:h200"):
        EngineConfig(NO_MODEL, device="sim:h100")


@pytest.mark.parametrize("device", ["auto", "cpu", "cuda", "cuda:1", "sim", "sim:h200", "sim:1=2,prefill=7"])
def test_every_spelling_of_a_device_is_accepted_without_touching_it(device) -> None:
    config = EngineConfig(NO_MODEL, device=device)  # no GPU needed: the device is checked when the engine starts
    assert config.simulated is device.startswith("sim")


def test_the_defaults_are_valid_and_a_config_is_a_value() -> None:
    config = EngineConfig("tiny", max_num_seqs=8, max_num_batched_tokens=8)  # a budget of exactly max_num_seqs
    assert config == EngineConfig("tiny", max_num_seqs=8, max_num_batched_tokens=8)
    assert dataclasses.replace(config, max_num_seqs=4).max_num_seqs == 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_num_seqs = 0  # type: ignore[misc]
    with pytest.raises(ValueError, match="max_num_batched_tokens"):
        dataclasses.replace(config, max_num_seqs=16)  # a replaced field is validated too
