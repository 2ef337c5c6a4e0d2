"""Engine options are typed and checked when parsed: a bad precision or device is one line before anything starts."""

from __future__ import annotations

import pytest

import adapters
from adapters import OptionsError


@pytest.mark.parametrize(("engine", "key", "value", "words"), [
    ("onnxruntime", "precision", "bogus", "onnx does not support precision 'bogus' here; choose one of: fp32, int8, int4"),
    ("onnxruntime", "precision", "fp16", "choose one of: fp32, int8, int4"),  # its help said fp16 before
    ("openvino", "precision", "int8", "openvino does not support precision 'int8' here; choose one of: fp32, fp16"),
    ("llama_cpp", "precision", "int3", "gguf does not support precision 'int3'"),
    ("own", "device", "sim:bogus", "unknown simulated device 'sim:bogus'; use sim:h200"),
    ("own-static", "device", "sim:h200", "a simulated device runs the continuous engine only: use --engine own"),
    ("own", "device", "SIM:h200", "'SIM:h200' is not a device; a simulated one is spelled sim or sim:PROFILE"),
    ("own", "device", "simulator", "'simulator' is not a device"),
])
def test_a_bad_precision_or_device_is_refused_when_the_options_are_parsed(engine, key, value, words):
    with pytest.raises(OptionsError, match="bad option for engine") as e:
        adapters.parse_options(engine, {key: value})
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(("engine", "key", "value"), [
    ("onnxruntime", "precision", "int4"), ("onnxruntime", "precision", "q8_0"), ("llama_cpp", "precision", "int8"),
    ("openvino", "precision", "FP16"), ("own", "device", "sim:h200"), ("own", "device", "sim:1=1.0,prefill=4"),
    ("own", "device", "cpu"), ("own-static", "device", "cpu"),
])
def test_valid_precisions_aliases_and_devices_pass_as_given(engine, key, value):
    assert getattr(adapters.parse_options(engine, {key: value}), key) == value
