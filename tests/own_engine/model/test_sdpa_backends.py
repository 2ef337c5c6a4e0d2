"""own_engine's forward never lets SDPA take cuDNN's attention on a GPU (own_engine.model.attention.sdpa_backends):
cuDNN builds an execution plan per new shape, hundreds of ms, and a served engine meets new shapes every step.
No GPU here: the switch itself is PyTorch's global flag, checked directly, and the forward is checked to run
its decoder layers inside the switch for its own device."""

from __future__ import annotations

import torch

from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.sampling_params import SamplingParams
from own_engine.model import attention, llama


def test_on_cuda_the_forward_s_window_turns_cudnn_attention_off_and_puts_it_back() -> None:
    assert torch.backends.cuda.cudnn_sdp_enabled()  # PyTorch's default
    with attention.sdpa_backends(torch.device("cuda")):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled()
    with attention.sdpa_backends(torch.device("cpu")):  # CPU: PyTorch's own choice, untouched
        assert torch.backends.cuda.cudnn_sdp_enabled()


def test_the_ab_switch_leaves_pytorch_s_choice(monkeypatch) -> None:
    monkeypatch.setattr(attention, "CUDNN_SDPA", True)
    with attention.sdpa_backends(torch.device("cuda")):
        assert torch.backends.cuda.cudnn_sdp_enabled()


def test_every_decoder_layer_runs_inside_the_switch_for_the_model_s_device(tiny_path, monkeypatch) -> None:
    seen: list[tuple[str, bool]] = []

    def as_if_cuda(device: torch.device):  # the CUDA window on this CPU: the flag is global, not per device
        seen.append((device.type, False))
        return attention._without_cudnn_sdpa()

    monkeypatch.setattr(llama, "sdpa_backends", as_if_cuda)
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", linear_kernels="torch"))
    inner = engine.model.decoder

    def decoder(model, x, positions, attn):
        seen.append(("decoder", torch.backends.cuda.cudnn_sdp_enabled()))
        return inner(model, x, positions, attn)

    engine.model.decoder = decoder
    out = engine.generate([[5, 6, 7, 8]], SamplingParams(max_tokens=3, ignore_eos=True))
    assert len(out[0]) == 3
    assert seen[:2] == [("cpu", False), ("decoder", False)]  # prefill: switched off around the layers
    assert all(flag is False for _, flag in seen) and len(seen) == 6  # and every decode step
    assert torch.backends.cuda.cudnn_sdp_enabled()  # put back after each forward
