"""The onnxruntime adapter: reference-exact greedy output, honest static batching, clean errors."""

from __future__ import annotations

import pytest

from adapters.base import AdapterError, RequestSpec
from tests.adapters.engines_common import (
    assert_greedy_is_the_reference,
    assert_missing_package_names_the_extra,
    chunk_times,
    long_then_late,
    started_on_tiny_model,
)


def test_missing_package_names_the_extra(monkeypatch):
    assert_missing_package_names_the_extra(monkeypatch, "onnxruntime", "onnxruntime_genai", "onnx")


@pytest.fixture(scope="module")
def ort_adapter():
    yield from started_on_tiny_model("onnxruntime", "onnxruntime_genai", max_batch=4, max_length=512)


@pytest.mark.engines
def test_greedy_output_is_the_reference(ort_adapter):
    a, info = ort_adapter
    assert info.format == "onnx" and info.max_batch == 4 and info.max_model_len == 512
    assert_greedy_is_the_reference(a, [[17 + 5 * i for i in range(14)]], 20)


@pytest.mark.engines
def test_static_batching_is_reported_and_real(ort_adapter):
    """A request arriving while a batch runs waits for it: exactly what EngineInfo.batching='static' says."""
    a, info = ort_adapter
    assert info.batching == "static" and any("static" in n for n in info.notes)
    long_t, late_t = long_then_late(a, 60)
    assert late_t[0] >= long_t[-1]


@pytest.mark.engines
def test_request_beyond_max_length_is_refused(ort_adapter):
    a, _ = ort_adapter
    with pytest.raises(AdapterError, match="max_length") as err:
        chunk_times(a, [RequestSpec("big", (5,) * 500, max_tokens=100)])
    assert err.value.kind == "refused"
