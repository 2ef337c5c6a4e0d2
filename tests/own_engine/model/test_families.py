"""own_engine against transformers' own implementation of each family (LLaMA, Qwen2, Mistral) at fp32.

Random weights from the `tiny-<family>` presets; prompts longer than Mistral's
64-token window, so the sliding window is exercised in prefill and in paged
decode (block edges, batches of different lengths), and in the static engine.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from model_cache.config import ModelConfig, ModelConfigError
from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.sampling_params import SamplingParams
from own_engine.core.static_engine import StaticBatchEngine
from own_engine.model import reference
from own_engine.model.loader import ModelLoadError, load_model
from tests.own_engine.conftest import hf_greedy, hf_logits

transformers = pytest.importorskip("transformers")
ATOL = 1e-4
FAMILIES = ("tiny-llama2", "tiny-llama3", "tiny-qwen2", "tiny-mistral")
LONG = [(i * 37) % 1900 + 100 for i in range(150)]  # beyond the 64-token window
SHORT = list(range(400, 431))


@pytest.fixture(scope="module")
def family_models(tmp_path_factory) -> dict[str, Path]:
    from model_cache.create import create_model

    root = tmp_path_factory.mktemp("families")
    return {p: create_model(p, p, root=root) for p in FAMILIES}


@pytest.fixture(scope="module")
def hf_models(family_models):
    return {p: transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
            for p, path in family_models.items()}


def test_each_preset_is_its_family_in_transformers(family_models, hf_models) -> None:
    kinds = {p: type(m).__name__ for p, m in hf_models.items()}
    assert kinds == {"tiny-llama2": "LlamaForCausalLM", "tiny-llama3": "LlamaForCausalLM",
                     "tiny-qwen2": "Qwen2ForCausalLM", "tiny-mistral": "MistralForCausalLM"}
    qwen = ModelConfig.from_path(family_models["tiny-qwen2"])
    assert qwen.qkv_bias and not qwen.o_bias and qwen.tie_word_embeddings
    assert hf_models["tiny-qwen2"].model.layers[0].self_attn.o_proj.bias is None
    mistral = ModelConfig.from_path(family_models["tiny-mistral"])
    assert mistral.sliding_window == 64 and mistral.window(1) == 64


@pytest.mark.parametrize("preset", FAMILIES)
def test_prefill_logits_match_transformers(family_models, hf_models, preset) -> None:
    torch.testing.assert_close(reference.logits(family_models[preset], LONG), hf_logits(hf_models[preset], LONG),
                               atol=ATOL, rtol=0)


@pytest.mark.parametrize("preset", FAMILIES)
def test_paged_engine_greedy_matches_transformers_beyond_the_window(family_models, hf_models, preset) -> None:
    engine = LLMEngine(EngineConfig(family_models[preset], device="cpu", block_size=8))
    outs = engine.generate([LONG, SHORT], SamplingParams(max_tokens=40, ignore_eos=True))  # SHORT crosses 64 too
    assert outs[0] == hf_greedy(hf_models[preset], LONG, 40)
    assert outs[1] == hf_greedy(hf_models[preset], SHORT, 40)


def test_mistral_window_through_chunked_prefill_and_batched_decode(family_models, hf_models) -> None:
    """Prefill in 24-token chunks (later chunks read the cache under the window); and two sequences prefilled in
    one step, so of equal length, which CPU decodes in one batched, window-masked call (not one call each)."""
    hf, path = hf_models["tiny-mistral"], family_models["tiny-mistral"]
    chunked = LLMEngine(EngineConfig(path, device="cpu", block_size=8, max_num_seqs=4, max_num_batched_tokens=24))
    assert chunked.generate([LONG], SamplingParams(max_tokens=30, ignore_eos=True)) == [hf_greedy(hf, LONG, 30)]
    other = [t + 1 for t in LONG]
    batched = LLMEngine(EngineConfig(path, device="cpu", block_size=8, max_num_seqs=4, max_num_batched_tokens=512))
    outs = batched.generate([LONG, other], SamplingParams(max_tokens=30, ignore_eos=True))
    assert outs == [hf_greedy(hf, LONG, 30), hf_greedy(hf, other, 30)]


def test_static_engine_respects_the_window(family_models, hf_models) -> None:
    engine = StaticBatchEngine(family_models["tiny-mistral"], device="cpu")
    outs = engine.generate([LONG, SHORT], SamplingParams(max_tokens=40, ignore_eos=True))
    assert outs == [hf_greedy(hf_models["tiny-mistral"], LONG, 40), hf_greedy(hf_models["tiny-mistral"], SHORT, 40)]


def test_qwen2_sliding_layers_match_transformers(family_models, tmp_path) -> None:
    folder = tmp_path / "qwen-sliding"
    shutil.copytree(family_models["tiny-qwen2"], folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(use_sliding_window=True, sliding_window=16, max_window_layers=1)  # layer 1 slides, layer 0 does not
    (folder / "config.json").write_text(json.dumps(cfg))
    assert ModelConfig.from_path(folder).layer_windows == (None, 16)
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    torch.testing.assert_close(reference.logits(folder, SHORT), hf_logits(hf, SHORT), atol=ATOL, rtol=0)
    [out] = LLMEngine(EngineConfig(folder, device="cpu", block_size=4)).generate([SHORT], SamplingParams(max_tokens=12,
                                                                                          ignore_eos=True))
    assert out == hf_greedy(hf, SHORT, 12)


def test_a_qwen2_checkpoint_with_an_o_proj_bias_is_refused(family_models, tmp_path) -> None:
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "qwen-obias"
    shutil.copytree(family_models["tiny-qwen2"], folder)
    w = load_file(str(folder / "model.safetensors"))
    w["model.layers.0.self_attn.o_proj.bias"] = torch.zeros(128)
    save_file(w, str(folder / "model.safetensors"))
    with pytest.raises(ModelLoadError, match="unexpected tensor 'model.layers.0.self_attn.o_proj.bias'"):
        load_model(folder)


def test_family_and_architecture_must_agree() -> None:
    base = {"hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4, "num_hidden_layers": 1,
            "vocab_size": 300}
    with pytest.raises(ModelConfigError, match="qwen2 .Qwen2ForCausalLM."):
        ModelConfig.from_dict({**base, "model_type": "qwen2", "architectures": ["LlamaForCausalLM"]})
    llama = ModelConfig.from_dict({**base, "model_type": "llama", "attention_bias": True})
    assert llama.qkv_bias and llama.o_bias
    assert ModelConfig.from_dict({**base, "model_type": "mistral", "sliding_window": None}).layer_windows == ()
