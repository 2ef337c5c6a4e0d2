"""Architectures by name, repo id, config.json file or folder; refusals in one line naming the fix."""

from __future__ import annotations

import json

import pytest

from advisor.sizing.architecture import load_architecture, shipped_architectures
from advisor.sizing.errors import SizingError

LLAMA = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
         "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256, "tie_word_embeddings": True,
         "max_position_embeddings": 131072}


def _write(folder, config) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder / "config.json")


def test_a_shipped_model_loads_by_name_and_by_repo_id_in_any_case():
    by_name = load_architecture("llama 3.1 8b")
    assert by_name is load_architecture("meta-llama/Llama-3.1-8B-Instruct")
    assert by_name is load_architecture("META-LLAMA/LLAMA-3.1-8B-INSTRUCT") is load_architecture("Llama-3.1-8B")
    assert (by_name.n_heads, by_name.n_kv_heads, by_name.head_dim) == (32, 8, 128)
    assert "huggingface.co/meta-llama/Llama-3.1-8B-Instruct" in by_name.source


@pytest.mark.parametrize(("name", "published"), [
    ("Llama 3.1 8B", 8.03e9), ("Llama 3.1 70B", 70.6e9), ("Llama 3.3 70B", 70.6e9), ("Llama 3.1 405B", 405.9e9),
    ("Qwen3 8B", 8.19e9), ("Qwen3 32B", 32.8e9), ("Mistral 7B v0.3", 7.25e9), ("SmolLM2 135M", 134.5e6),
    ("SmolLM2 360M", 361.8e6), ("SmolLM2 1.7B", 1.71e9)])
def test_shipped_parameter_counts_are_within_one_percent_of_the_published(name, published):
    assert shipped_architectures()[name].n_params == pytest.approx(published, rel=0.01)


def test_a_config_json_file_and_its_folder_load_alike(tmp_path):
    path = _write(tmp_path / "my-llama", LLAMA)
    from_file, from_folder = load_architecture(path), load_architecture(str(tmp_path / "my-llama"))
    assert from_file == from_folder
    assert (from_file.name, from_file.family, from_file.head_dim, from_file.tie_word_embeddings) == (
        "my-llama", "llama", 64, True)
    assert from_file.n_params == 128256 * 2048 + 16 * from_file.params_per_layer + 2048  # tied: one embedding


def test_an_explicit_head_dim_wins_over_hidden_over_heads(tmp_path):
    qwen3 = {**LLAMA, "model_type": "qwen3", "hidden_size": 2560, "num_attention_heads": 32, "head_dim": 128}
    arch = load_architecture(_write(tmp_path / "q", qwen3))
    assert arch.head_dim == 128 and arch.q_size == 4096  # not 2560 / 32 = 80


def test_kv_heads_default_to_the_attention_heads(tmp_path):
    config = {k: v for k, v in LLAMA.items() if k != "num_key_value_heads"}
    assert load_architecture(_write(tmp_path / "mha", config)).n_kv_heads == 32


def test_a_multimodal_gemma3_config_is_read_from_its_text_config(tmp_path):
    gemma3 = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
              "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240,
                              "num_hidden_layers": 34, "sliding_window": 1024},
              "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27}}
    arch = load_architecture(_write(tmp_path / "gemma-3-4b-it", gemma3))
    # heads, KV heads, head_dim and vocabulary from Gemma3TextConfig's defaults, as transformers reads this file
    assert (arch.family, arch.hidden_size, arch.n_heads, arch.n_kv_heads, arch.head_dim) == ("gemma3", 2560, 8, 4, 256)
    assert arch.tie_word_embeddings and arch.n_params == pytest.approx(3.88e9, rel=0.01)  # Gemma 3 4B's text model


def test_a_moe_config_is_refused_in_one_line_naming_its_experts(tmp_path):
    mixtral = {**LLAMA, "model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2}
    with pytest.raises(SizingError) as e:
        load_architecture(_write(tmp_path / "Mixtral-8x7B", mixtral))
    assert str(e.value) == "MoE models are not sized yet (later work): Mixtral-8x7B has 8 experts"
    qwen_moe = {**LLAMA, "model_type": "qwen3_moe", "num_experts": 128, "moe_intermediate_size": 768}
    with pytest.raises(SizingError, match="has 128 experts"):
        load_architecture(_write(tmp_path / "qmoe", qwen_moe))


def test_a_missing_field_is_named_with_the_file(tmp_path):
    path = _write(tmp_path / "broken", {k: v for k, v in LLAMA.items() if k != "intermediate_size"})
    with pytest.raises(SizingError) as e:
        load_architecture(path)
    assert "`intermediate_size`" in str(e.value) and path in str(e.value) and "\n" not in str(e.value)


def test_an_unknown_family_lists_the_supported_ones(tmp_path):
    with pytest.raises(SizingError, match="llama, qwen2, qwen3, mistral, gemma, gemma2, gemma3"):
        load_architecture(_write(tmp_path / "phi", {**LLAMA, "model_type": "phi3"}))


def test_an_unknown_name_lists_the_shipped_names():
    with pytest.raises(SizingError) as e:
        load_architecture("llama-9000")
    assert "Llama 3.1 8B" in str(e.value) and "SmolLM2 135M" in str(e.value) and "\n" not in str(e.value)


def test_a_missing_or_non_json_file_says_so(tmp_path):
    with pytest.raises(SizingError, match="no such file"):
        load_architecture(str(tmp_path / "absent" / "config.json"))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(SizingError, match="not JSON"):
        load_architecture(str(tmp_path / "bad.json"))
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(SizingError, match="JSON object"):
        load_architecture(str(tmp_path / "list.json"))
