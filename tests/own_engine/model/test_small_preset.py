"""The small-100m benchmark preset end to end: created offline, loaded by transformers, same logits and tokens."""

from __future__ import annotations

import pytest
import torch

from model_cache.create import create_model
from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.sampling_params import SamplingParams
from own_engine.model import reference
from tests.own_engine.conftest import hf_greedy, hf_logits


@pytest.mark.slow
def test_small_100m_matches_transformers(tmp_path) -> None:
    transformers = pytest.importorskip("transformers")
    path = create_model("small", "small-100m", root=tmp_path)
    hf = transformers.LlamaForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
    prompt = list(range(100, 164))
    torch.testing.assert_close(reference.logits(path, prompt), hf_logits(hf, prompt), atol=1e-4, rtol=0)
    engine = LLMEngine(EngineConfig(path, device="cpu", kv_cache_gb=0.1))
    [out] = engine.generate([prompt], SamplingParams(max_tokens=8, ignore_eos=True))
    assert out == hf_greedy(hf, prompt, 8)
