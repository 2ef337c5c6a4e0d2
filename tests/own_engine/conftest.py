"""Shared fixtures: one tiny model made offline per test session, and transformers' view of it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from model_cache.create import create_model

    return create_model("tiny", "tiny", root=tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def hf_model(tiny_path: Path):
    transformers = pytest.importorskip("transformers")
    return transformers.LlamaForCausalLM.from_pretrained(str(tiny_path), dtype=torch.float32).eval()


def hf_logits(hf_model, ids: list[int]) -> torch.Tensor:
    """[len(ids), vocab] logits of transformers' full forward."""
    with torch.no_grad():
        return hf_model(torch.tensor([ids])).logits[0].float()


def hf_greedy(hf_model, ids: list[int], n: int) -> list[int]:
    with torch.no_grad():
        out = hf_model.generate(torch.tensor([ids]), max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                pad_token_id=2)
    return out[0, len(ids):].tolist()


@pytest.fixture
def kernel():
    """own_engine's native kernels; a skip only where this machine can't build them, a failure where they build
    wrong."""
    from own_engine.kernels.backends import native_kernels
    from own_engine.kernels.native import NOT_HERE

    kernels = native_kernels()
    if isinstance(kernels, str):
        if any(s in kernels for s in NOT_HERE):
            pytest.skip(kernels)
        pytest.fail(kernels)
    return kernels
