"""The openvino adapter: reference-exact greedy output, continuous batching, KV-cache precision, clean errors."""

from __future__ import annotations

import pytest

from tests.adapters.engines_common import (
    assert_bad_option_refused,
    assert_greedy_is_the_reference,
    assert_missing_package_names_the_extra,
    long_then_late,
    started_on_tiny_model,
)


def test_missing_package_names_the_extra(monkeypatch):
    assert_missing_package_names_the_extra(monkeypatch, "openvino", "openvino_genai", "openvino")


def test_bad_options_are_refused_at_construction():
    assert_bad_option_refused("openvino", "openvino_genai", "kv_cache_precision", kv_cache_precision="int3")


@pytest.fixture(scope="module")
def ov_adapter():
    yield from started_on_tiny_model("openvino", "openvino_genai", max_batch=4)


@pytest.mark.engines
def test_greedy_output_is_the_reference(ov_adapter):
    a, info = ov_adapter
    assert info.kv_cache_dtype == "f32" and info.format == "openvino-ir" and info.batching == "continuous"
    assert_greedy_is_the_reference(a, [[17 + 5 * i for i in range(14)]], 20)


@pytest.mark.engines
def test_a_late_request_joins_the_running_batch(ov_adapter):
    a, _ = ov_adapter
    long_t, late_t = long_then_late(a, 1000)
    assert late_t[-1] < long_t[-1], "the late request waited for the running one: not continuous batching"
    assert a.stats()["kv_cache_usage_pct"] >= 0.0
