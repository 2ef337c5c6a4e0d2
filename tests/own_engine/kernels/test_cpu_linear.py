"""oneDNN packed linears (own_engine.kernels.cpu_linear): same results as plain F.linear, biases and tied heads kept."""

from __future__ import annotations

import pytest
import torch

from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.sampling_params import SamplingParams
from own_engine.kernels.cpu_linear import PackedLinear, onednn_linear_works
from own_engine.model.llama import Linear

pytestmark = pytest.mark.skipif(not onednn_linear_works(), reason="this PyTorch has no packed oneDNN linear")
PROMPTS = [list(range(300, 341)), [(i * 31) % 900 + 50 for i in range(90)]]


def test_a_packed_linear_equals_the_plain_one_for_every_row_count() -> None:
    torch.manual_seed(0)
    plain = Linear(48, 80, True, torch.float32)
    with torch.no_grad():
        plain.weight.normal_()
        plain.bias.normal_()  # type: ignore[union-attr]
        packed = PackedLinear(plain)
        for rows in (1, 3, 64, 200):
            x = torch.randn(rows, 48)
            torch.testing.assert_close(packed(x), plain(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("preset", ["tiny-llama2", "tiny-qwen2"])  # untied head; q/k/v biases and a tied head
def test_packed_engine_generates_what_the_plain_one_does(tmp_path, preset) -> None:
    from model_cache.create import create_model

    path = create_model(preset, preset, root=tmp_path)
    packed = LLMEngine(EngineConfig(path, device="cpu", max_num_seqs=4, linear_kernels="onednn"))
    plain = LLMEngine(EngineConfig(path, device="cpu", max_num_seqs=4, linear_kernels="torch"))
    assert packed.describe()["linear_kernels"] == "onednn-packed"
    assert plain.describe()["linear_kernels"] == "torch"
    tied = packed.model.lm_head is None
    assert tied == (preset == "tiny-qwen2")
    sp = SamplingParams(max_tokens=24, ignore_eos=True)
    assert packed.generate(PROMPTS, sp) == plain.generate(PROMPTS, sp)
    assert sum(isinstance(m, PackedLinear) for m in packed.model.modules()) == packed.num_packed_linears > 0


_CAPS_PROBE = """
import os, torch
from own_engine.kernels.cpu_linear import pack_linears
from own_engine.model.loader import load_model
model = load_model({path!r}, device="cpu")
n, _, _ = pack_linears(model, "onednn", "not asked for")
print(n, os.environ.get("ONEDNN_PRIMITIVE_CACHE_CAPACITY"), os.environ.get("LRU_CACHE_CAPACITY"))
"""


@pytest.mark.parametrize("user_value", [None, "7"])
def test_packing_caps_the_per_shape_caches_unless_the_user_set_them(tmp_path, user_value) -> None:
    import os
    import subprocess
    import sys

    from model_cache.create import create_model
    from own_engine.kernels.cpu_linear import PRIMITIVE_CACHE_CAPACITY

    path = create_model("tiny-llama2", "tiny-llama2", root=tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")}
    if user_value is not None:
        env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = user_value
    out = subprocess.run([sys.executable, "-c", _CAPS_PROBE.format(path=str(path))], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert int(out[0]) > 0  # the linears were packed
    assert out[1:] == [user_value or str(PRIMITIVE_CACHE_CAPACITY), str(PRIMITIVE_CACHE_CAPACITY)]
