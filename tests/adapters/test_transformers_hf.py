"""The `transformers` adapter (HF generate(), static batches): exact greedy ids, real per-step stamps, static batching."""

from __future__ import annotations

import asyncio

import pytest

from adapters.base import RequestSpec
from tests.adapters.engines_common import (
    assert_greedy_is_the_reference,
    assert_missing_package_names_the_extra,
    chunk_times,
    long_then_late,
    output_ids,
    started_on_tiny_model,
)


def test_missing_package_names_the_extra(monkeypatch):
    assert_missing_package_names_the_extra(monkeypatch, "transformers", "transformers", "transformers")


@pytest.fixture(scope="module")
def hf_adapter():
    yield from started_on_tiny_model("transformers", "transformers", device="cpu", max_batch=4)


def test_left_padded_batch_gives_the_reference_greedy_ids(hf_adapter):
    a, info = hf_adapter
    assert info.format == "hf-safetensors" and info.max_batch == 4 and info.precision == "fp32"
    # three prompts of different lengths sent together: one left-padded batch
    assert_greedy_is_the_reference(a, [[17 + 5 * i for i in range(14)], [40, 41, 42], [9] * 7], 12)


def test_stamps_are_taken_per_step_not_at_the_end(hf_adapter):
    a, _ = hf_adapter
    (times,) = chunk_times(a, [RequestSpec("steps", (5, 6, 7, 8), max_tokens=30)])
    assert len(times) == 30 and all(b > a for a, b in zip(times, times[1:], strict=False))


def test_static_batching_is_reported_and_real(hf_adapter):
    """A request arriving while a batch runs waits for that batch to end: what batching='static' says."""
    a, info = hf_adapter
    assert info.batching == "static" and any("static" in n for n in info.notes)
    long_t, late_t = long_then_late(a, 60)
    assert late_t[0] >= long_t[-1]


def test_a_short_member_ends_its_stream_early_but_its_batch_runs_to_the_longest(hf_adapter):
    a, _ = hf_adapter
    short, long_ = chunk_times(a, [RequestSpec("short", (5, 6, 7), max_tokens=3),
                                   RequestSpec("long", (8, 9, 10), max_tokens=40)])
    assert len(short) == 3 and len(long_) == 40
    assert short[-1] < long_[5]  # the short one's stream ended with its third step


def test_different_sampling_settings_are_served_in_separate_batches(hf_adapter):
    a, _ = hf_adapter
    outs = output_ids(a, [RequestSpec("greedy", (5, 6, 7), max_tokens=5),
                          RequestSpec("sampled", (5, 6, 7), max_tokens=5, temperature=0.8, seed=1)])
    assert [len(o) for o in outs] == [5, 5]


def test_a_bad_device_is_refused_with_its_name():
    from adapters.base import EngineUnavailable

    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU: device=cuda is valid here")
    import adapters

    a = adapters.create("transformers", "tiny", device="cuda", isolate=False)
    with pytest.raises((ValueError, EngineUnavailable), match="cuda"):
        asyncio.run(asyncio.to_thread(a.start))
