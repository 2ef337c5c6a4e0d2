"""Each engine's reserve says where its figures come from, and own_engine's fraction is own_engine's own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from advisor.sizing.architecture import load_architecture
from advisor.sizing.reserve import OWN_KV_FRACTION, engine_budget

REPO = Path(__file__).resolve().parents[3]


def test_own_engine_fraction_is_the_one_own_engine_uses_on_cuda():
    tree = ast.parse((REPO / "own_engine/core/runner_defaults.py").read_text())
    values = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name)}
    assert ast.literal_eval(values["DEFAULT_KV_FRACTION_CUDA"]) == OWN_KV_FRACTION


@pytest.mark.parametrize(("engine", "cited"), [
    ("vllm", "gpu_memory_utilization 0.9"), ("sglang", "mem_fraction_static"),
    ("trtllm", "free_gpu_memory_fraction 0.9"), ("own", "DEFAULT_KV_FRACTION_CUDA")])
def test_every_engine_names_its_memory_setting_and_the_estimates_say_so(engine, cited):
    notes = engine_budget(load_architecture("Llama 3.1 70B"), 80e9, 4, engine).notes
    assert cited in notes[0]
    if engine != "sglang":  # SGLang's reserve is its own formula; the others add advisor's estimates
        assert any("estimate" in note for note in notes) and any("TP 4" in note for note in notes)


def test_sglang_fraction_follows_gpu_memory_and_tp():
    arch = load_architecture("Llama 3.1 8B")
    # 24 GB = 22888 MiB: chunk 2048, graphs 24 at TP 1 -> reserved 512 + 3072 + 48 + 128 = 3760 MiB -> 0.836
    assert "mem_fraction_static 0.836" in engine_budget(arch, 24e9, 1, "sglang").notes[0]
    # 141 GB = 134468 MiB at TP 8: chunk 8192, graphs 512 -> 512 + 12288 + 1024 + 1024 = 14848 MiB -> 0.89
    assert "mem_fraction_static 0.89 " in engine_budget(arch, 141e9, 8, "sglang").notes[0]
    # at TP 1 the same GPU captures graphs up to 256 (512 from TP 4 up)
    assert "cuda_graph_max_bs 256, TP 1" in engine_budget(arch, 141e9, 1, "sglang").notes[0]
