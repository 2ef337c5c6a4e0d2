"""CPU linear kernels (own_engine.cpu_linear): oneDNN packed weights and OpenBLAS at one row give the same results
as plain F.linear, biases and tied heads kept."""

from __future__ import annotations

import pytest
import torch

from own_engine.cpu_linear import GemvLinear, PackedLinear, one_row_threads, onednn_linear_works, openblas_gemv_works
from own_engine.llm_engine import LLMEngine
from own_engine.model import Linear
from own_engine.sampling_params import SamplingParams

pytestmark = pytest.mark.skipif(not onednn_linear_works(), reason="this PyTorch has no packed oneDNN linear")
needs_openblas = pytest.mark.skipif(not openblas_gemv_works(), reason="numpy here does not run on OpenBLAS")
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
    from own_engine.create import create_model

    path = create_model(preset, preset, root=tmp_path)
    packed = LLMEngine(path, device="cpu", max_num_seqs=4)
    plain = LLMEngine(path, device="cpu", max_num_seqs=4, linear_kernels="torch")
    assert packed.describe()["linear_kernels"] == "onednn-packed"
    assert plain.describe()["linear_kernels"] == "torch"
    tied = packed.model.lm_head is None
    assert tied == (preset == "tiny-qwen2")
    sp = SamplingParams(max_tokens=24, ignore_eos=True)
    assert packed.generate(PROMPTS, sp) == plain.generate(PROMPTS, sp)
    assert sum(isinstance(m, PackedLinear) for m in packed.model.modules()) > 0


@needs_openblas
def test_a_gemv_linear_equals_the_plain_one_for_every_row_count() -> None:
    torch.manual_seed(0)
    for bias in (True, False):
        plain = Linear(48, 80, bias, torch.float32)
        with torch.no_grad():
            plain.weight.normal_()
            if plain.bias is not None:
                plain.bias.normal_()
            gemv = GemvLinear(plain)
            assert gemv.weight.data_ptr() == plain.weight.data_ptr()  # plain weights shared, not copied
            for rows in (1, 3, 64):
                x = torch.randn(rows, 48)
                torch.testing.assert_close(gemv(x), plain(x), atol=1e-4, rtol=1e-4)


@needs_openblas
@pytest.mark.parametrize("preset", ["tiny-llama2", "tiny-qwen2"])
def test_gemv_engines_generate_what_the_plain_ones_do(tmp_path, preset) -> None:
    from own_engine.create import create_model
    from own_engine.static_engine import StaticBatchEngine

    path = create_model(preset, preset, root=tmp_path)
    sp = SamplingParams(max_tokens=24, ignore_eos=True)
    for make in (lambda k: LLMEngine(path, device="cpu", max_num_seqs=4, linear_kernels=k),
                 lambda k: StaticBatchEngine(path, device="cpu", max_batch_size=4, linear_kernels=k)):
        gemv, plain = make("openblas-gemv"), make("torch")
        assert gemv.describe()["linear_kernels"] == "openblas-gemv"
        assert any(isinstance(m, GemvLinear) for m in gemv.model.modules())
        # one prompt alone decodes one row per step (the OpenBLAS path); two together take the oneDNN path
        assert gemv.generate(PROMPTS[:1], sp) == plain.generate(PROMPTS[:1], sp)
        assert gemv.generate(PROMPTS, sp) == plain.generate(PROMPTS, sp)


def test_one_row_steps_run_torch_at_one_thread_and_put_the_count_back() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with one_row_threads("openblas-gemv", 1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with one_row_threads("openblas-gemv", 5), one_row_threads("onednn-packed", 1):
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_an_unknown_kernel_name_is_refused_with_the_choices(tmp_path) -> None:
    from own_engine.create import create_model

    path = create_model("tiny-llama2", "tiny-llama2", root=tmp_path)
    with pytest.raises(ValueError, match="linear_kernels must be one of onednn-packed, openblas-gemv, torch"):
        LLMEngine(path, device="cpu", linear_kernels="fast")
