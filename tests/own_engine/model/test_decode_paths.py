"""Every way a decode row reads its cached context gives transformers' logits, and each backend takes its one
decode route whatever the step: CPU SDPA's runs (a row whose blocks are one run alone, in place; scattered
neighbours of one context length together, gathered); the padded batch (CUDA graphs' route, eager on CPU); the
native kernel (any of these layouts)."""

from __future__ import annotations

import pytest
import torch

from own_engine.core.block_manager import BlockManager
from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.sampling_params import SamplingParams
from own_engine.model.paged_attention import PagedAttention
from tests.own_engine.conftest import hf_logits
from tests.own_engine.model.test_correctness import ATOL, LogitRecorder

UNEQUAL = [[3, 4, 5], list(range(100, 140)), [9], list(range(500, 517))]
EQUAL = [list(range(200, 211)), list(range(300, 311)), list(range(400, 411))]


def _check(engine: LLMEngine, prompts: list[list[int]], hf_model) -> None:
    rec = LogitRecorder(engine)
    outs = engine.generate(prompts, SamplingParams(max_tokens=9, ignore_eos=True))
    by_seq = sorted({sid for sid, _, _ in rec.rows})
    for prompt, out, sid in zip(prompts, outs, by_seq, strict=True):
        ref = hf_logits(hf_model, prompt + out)
        rows = [(n, row) for s, n, row in rec.rows if s == sid]
        assert len(rows) == 9
        for n, row in rows:
            torch.testing.assert_close(row, ref[n - 1], atol=ATOL, rtol=0)


def _modes(monkeypatch) -> list[str]:
    """Record which decode route each step took and how (every route attends through `attend`, but a
    decode-only step on the native kernels, which runs its layers in one call)."""
    import own_engine.kernels.native_layer as native_layer

    seen: list[str] = []
    inner, one_call = PagedAttention.attend, native_layer.decode_layers_forward

    def spy_step(*args):
        seen.append("native")
        return one_call(*args)

    monkeypatch.setattr(native_layer, "decode_layers_forward", spy_step)

    def spy(self, layer, q, k, v, window=None):
        m = self.meta
        if layer == 0 and m.num_decodes:
            if m.native is not None:
                seen.append("native")
            elif m.runs is None:
                seen.append("padded")
            else:
                seen.extend("view" if r.k is not None else f"gather {r.rows}" for r in m.runs)
        return inner(self, layer, q, k, v, window)

    monkeypatch.setattr(PagedAttention, "attend", spy)
    return seen


def test_unequal_contexts_read_the_cache_in_place(tiny_path, hf_model, monkeypatch) -> None:
    seen = _modes(monkeypatch)
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", max_num_seqs=4, block_size=4, linear_kernels="onednn"))
    assert engine.runner.decode_route == "sdpa-runs"
    _check(engine, UNEQUAL, hf_model)
    assert set(seen) == {"view"}


def test_scattered_blocks_are_gathered(tiny_path, hf_model, monkeypatch) -> None:
    seen = _modes(monkeypatch)
    monkeypatch.setattr(BlockManager, "_first_free_run", lambda self, n: None)  # never a run: blocks interleave
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", max_num_seqs=4, block_size=4, linear_kernels="onednn"))
    _check(engine, UNEQUAL, hf_model)
    assert "gather 1" in seen


def test_equal_contexts_in_place_are_one_call_per_sequence(tiny_path, hf_model, monkeypatch) -> None:
    """In place, one SDPA per sequence costs 1.6-4.6x less than one over the gathered blocks of all
    (benchmarks/decode_runs.py): equal contexts are not batched while their blocks are runs."""
    seen = _modes(monkeypatch)
    _check(LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=4, linear_kernels="onednn")), EQUAL, hf_model)
    assert set(seen) == {"view"}


def test_scattered_equal_contexts_are_one_run(tiny_path, hf_model, monkeypatch) -> None:
    seen = _modes(monkeypatch)
    monkeypatch.setattr(BlockManager, "_first_free_run", lambda self, n: None)
    _check(LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=4, linear_kernels="onednn")), EQUAL, hf_model)
    assert "gather 3" in seen  # once the sequences outgrow their first blocks, none is a run of blocks


def test_scattered_equal_neighbours_make_one_run_each(tiny_path, hf_model, monkeypatch) -> None:
    seen = _modes(monkeypatch)
    monkeypatch.setattr(BlockManager, "_first_free_run", lambda self, n: None)
    prompts = [list(range(100, 140)), list(range(200, 240)), [9], [3, 4, 5], list(range(300, 340))]
    _check(LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=4, max_num_seqs=5, linear_kernels="onednn")), prompts,
           hf_model)
    assert "gather 2" in seen and "gather 1" in seen  # the first two rows share a length, the others do not


def test_cuda_graphs_route_is_the_padded_batch_on_every_step(tiny_path, hf_model, monkeypatch) -> None:
    seen = _modes(monkeypatch)
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=4, max_num_seqs=4, cuda_graphs=True,
                       linear_kernels="onednn"))
    assert engine.runner.decode_route == "sdpa-padded"
    _check(engine, UNEQUAL, hf_model)
    _check(engine, EQUAL, hf_model)
    assert set(seen) == {"padded"}


@pytest.mark.parametrize("scattered", [False, True])
@pytest.mark.parametrize("prompts", [UNEQUAL, EQUAL], ids=["unequal", "equal"])
def test_the_native_kernel_reads_every_layout(tiny_path, hf_model, monkeypatch, scattered, prompts) -> None:
    from own_engine.kernels.backends import native_kernels
    from own_engine.kernels.native import NOT_HERE

    kernels = native_kernels()
    if isinstance(kernels, str):
        (pytest.skip if any(s in kernels for s in NOT_HERE) else pytest.fail)(kernels)
    seen = _modes(monkeypatch)
    if scattered:
        monkeypatch.setattr(BlockManager, "_first_free_run", lambda self, n: None)
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", max_num_seqs=4, block_size=4))
    assert engine.describe()["decode_attention"] == "native" and engine.runner.decode_route == "native"
    _check(engine, prompts, hf_model)
    assert set(seen) == {"native"}
