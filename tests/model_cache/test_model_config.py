"""config.json parsing (old and new transformers keys) and RoPE scaling against transformers."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from model_cache.config import ModelConfig, ModelConfigError
from own_engine.model import reference
from tests.own_engine.conftest import hf_logits

BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
        "num_attention_heads": 4, "num_hidden_layers": 1, "vocab_size": 300, "max_position_embeddings": 128}


def test_old_and_new_rope_keys_parse_the_same() -> None:
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64}
    old = ModelConfig.from_dict({**BASE, "rope_theta": 500000.0, "rope_scaling": scaling, "torch_dtype": "bfloat16"})
    new = ModelConfig.from_dict({**BASE, "rope_parameters": {**scaling, "rope_theta": 500000.0}, "dtype": "bfloat16"})
    assert old == new
    assert new.rope_theta == 500000.0 and new.rope_type == "llama3" and new.dtype == "bfloat16"
    assert new.num_key_value_heads == 4 and new.head_dim == 16  # defaults derived like transformers
    legacy = ModelConfig.from_dict({**BASE, "rope_scaling": {"type": "linear", "factor": 2.0}})
    assert legacy.rope_type == "linear"
    default = ModelConfig.from_dict({**BASE, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}})
    assert default.rope_type == "default" and default.rope_scaling == {}


@pytest.mark.parametrize("bad, match", [
    ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}, "not supported"),
    ({"rope_scaling": {"rope_type": "longrope", "factor": 2.0}}, "longrope"),
    ({"num_key_value_heads": 3}, "multiple"),
])
def test_unsupported_configs_are_refused_with_a_reason(bad, match) -> None:
    with pytest.raises(ModelConfigError, match=match):
        ModelConfig.from_dict({**BASE, **bad})


def test_missing_config_names_the_fix(tmp_path) -> None:
    with pytest.raises(ModelConfigError, match="models create"):
        ModelConfig.from_path(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelConfigError, match="not valid JSON"):
        ModelConfig.from_path(tmp_path)


@pytest.mark.parametrize("rope", [
    {"rope_type": "linear", "factor": 4.0},
    {"rope_type": "dynamic", "factor": 2.0},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 512},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
])
def test_rope_scaling_logits_match_transformers(tiny_path, tmp_path, rope) -> None:
    transformers = pytest.importorskip("transformers")
    folder = tmp_path / rope["rope_type"]
    shutil.copytree(tiny_path, folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["rope_parameters"] = {**rope, "rope_theta": cfg["rope_theta"]}
    cfg["rope_scaling"] = dict(rope)
    (folder / "config.json").write_text(json.dumps(cfg))
    hf = transformers.LlamaForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    ids = list(range(3, 200, 7))
    torch.testing.assert_close(reference.logits(folder, ids), hf_logits(hf, ids), atol=1e-4, rtol=0)
