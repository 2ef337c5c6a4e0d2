"""own_engine's kernel backends behind the model's one linear + attention interface (issue 28): chosen once at
load (`backends.choose`), each with one decode route (`paged_attention.decode_route`), each held to the torch
backend's floats (logits within 1e-4) and greedy ids on the same inputs: `tiny`, the family presets and (slow)
`small-100m`.

Backends: torch (F.linear, SDPA), oneDNN (packed linears), native C (panel linears, native attention and
decoder layers) and the CUDA-graphs route (on CPU it runs the same padded fixed-shape decode eagerly). One that
cannot run on this machine is skipped, with the reason, where the machine lacks it; a native build that fails
any other way fails the test.
"""

from __future__ import annotations

import pytest
import torch

from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.sampling_params import SamplingParams
from own_engine.kernels.backends import KernelChoice, choose, native_kernels
from own_engine.kernels.cpu_linear import onednn_linear_works
from own_engine.kernels.native import NOT_HERE
from own_engine.kernels.native_layer import NativeLayers
from own_engine.model.llama import torch_layers
from own_engine.model.loader import load_model

BACKENDS = {"torch": {"linear_kernels": "torch"}, "onednn": {"linear_kernels": "onednn"},
            "native": {"linear_kernels": "panel"}, "graphs": {"linear_kernels": "torch", "cuda_graphs": True}}
FAMILIES = ("tiny-llama2", "tiny-llama3", "tiny-qwen2", "tiny-mistral")
ATOL = 1e-4  # what own_engine is held to against transformers (tests/own_engine/model/test_correctness.py)
PROMPTS = [[(i * 37) % 1900 + 100 for i in range(90)], list(range(400, 431)), [5, 17, 300]]


def _needs(name: str) -> None:
    if name == "onednn" and not onednn_linear_works():
        pytest.skip("this PyTorch has no packed oneDNN linear")
    if name == "native":
        kernels = native_kernels()
        if isinstance(kernels, str):
            if any(s in kernels for s in NOT_HERE):
                pytest.skip(kernels)
            pytest.fail(kernels)


class _Logits:
    """Wraps the engine's sampler: every logits row it samples from, in order."""

    def __init__(self, engine: LLMEngine) -> None:
        self.inner, self.rows = engine.runner.sampler, []
        engine.runner.sampler = self

    def __call__(self, logits: torch.Tensor, seqs) -> list[int]:
        self.rows += [(seq.seq_id, len(seq), row.clone()) for row, seq in zip(logits, seqs, strict=True)]
        return self.inner(logits, seqs)


def _run(path, name: str, max_tokens: int = 12) -> tuple[list[list[int]], list, LLMEngine]:
    # small blocks and a small token budget: decodes cross block edges, prompts arrive in chunks beside decodes
    engine = LLMEngine(EngineConfig(path, device="cpu", block_size=4, max_num_seqs=3, max_num_batched_tokens=40,
                       **BACKENDS[name]))
    rec = _Logits(engine)
    return engine.generate(PROMPTS, SamplingParams(max_tokens=max_tokens, ignore_eos=True)), rec.rows, engine


@pytest.mark.parametrize("name", ["onednn", "native", "graphs"])
def test_every_backend_gives_the_torch_backends_floats_on_the_same_inputs(tiny_path, name) -> None:
    _needs(name)
    want_ids, want_rows, _ = _run(tiny_path, "torch")
    ids, rows, engine = _run(tiny_path, name)
    assert ids == want_ids
    # the same sequences (ids count up across engines: relative to each engine's first) at the same lengths
    assert [(s - rows[0][0], n) for s, n, _ in rows] == [(s - want_rows[0][0], n) for s, n, _ in want_rows]
    for (_, _, got), (_, _, want) in zip(rows, want_rows, strict=True):
        torch.testing.assert_close(got, want, atol=ATOL, rtol=0)
    described = engine.describe()
    assert (described["decode_attention"], described["layer_ops"]) == (
        ("native", "native") if name == "native" else ("sdpa", "torch"))
    assert described["cuda_graphs"] == (name == "graphs")


def _available() -> list[str]:
    """The backends other than torch that run here (the floats test on `tiny` says why one does not)."""
    return [name for name in ("onednn", "native", "graphs")
            if not (name == "onednn" and not onednn_linear_works()
                    or name == "native" and isinstance(native_kernels(), str))]


def _same_as_torch(path, max_tokens: int) -> None:
    want_ids, want_rows, _ = _run(path, "torch", max_tokens=max_tokens)
    for name in _available():
        ids, rows, _ = _run(path, name, max_tokens=max_tokens)
        assert ids == want_ids, name
        assert len(rows) == len(want_rows), name
        for (_, n, got), (_, _, want) in zip(rows, want_rows, strict=True):
            torch.testing.assert_close(got, want, atol=ATOL, rtol=0, msg=lambda m, n=n, b=name: f"{b} at {n}: {m}")


@pytest.mark.parametrize("preset", FAMILIES)
def test_every_backend_gives_the_same_floats_and_greedy_ids_on_each_family(tmp_path_factory, preset) -> None:
    from model_cache.create import create_model

    _same_as_torch(create_model(preset, preset, root=tmp_path_factory.mktemp("backends")), max_tokens=20)


@pytest.mark.slow
def test_every_backend_gives_the_same_floats_and_greedy_ids_on_small_100m(tmp_path) -> None:
    from model_cache.create import create_model
    from model_cache.paths import is_model_dir, models_root

    cached = models_root() / "small-100m"  # the one `advisor models create small-100m` made, if there is one
    _same_as_torch(cached if is_model_dir(cached) else create_model("small-100m", "small-100m", root=tmp_path),
                   max_tokens=16)


def test_the_backend_is_chosen_once_and_put_behind_the_models_interface(tiny_path) -> None:
    """`choose` sets the model's decoder stack and linears; the model itself has no backend switch."""
    model = load_model(tiny_path, device="cpu")
    assert model.decoder is torch_layers
    choice = choose(model, "torch")
    assert choice == KernelChoice("torch", 0, None) and model.decoder is torch_layers
    native = native_kernels()
    model = load_model(tiny_path, device="cpu")
    choice = choose(model, "auto")
    if isinstance(native, str):
        assert choice.attention is None and model.decoder is torch_layers and choice.note == native
    else:
        assert choice.linear == "panel-avx512" and choice.attention is native and choice.native_layers
        assert isinstance(model.decoder, NativeLayers)
    with pytest.raises(ValueError, match="linear_kernels must be one of"):
        choose(model, "fastest")


ROUTES = {"torch": "sdpa-runs", "onednn": "sdpa-runs", "native": "native", "graphs": "sdpa-padded"}


@pytest.mark.parametrize("name", list(BACKENDS))
def test_every_step_of_a_backend_takes_its_one_decode_route(tiny_path, monkeypatch, name) -> None:
    """Steps of every kind (decode-only, decodes beside prefill chunks, equal and unequal contexts, block edges):
    the decode rows of each take the route the backend was given at load, and no other."""
    import own_engine.kernels.native_layer as native_layer
    from own_engine.model.paged_attention import PagedAttention

    _needs(name)
    seen: list[str] = []
    attend, one_call = PagedAttention.attend, native_layer.decode_layers_forward

    def spy(self, layer, q, k, v, window=None):
        m = self.meta
        if layer == 0 and m.num_decodes:
            seen.append("native" if m.native is not None else "sdpa-runs" if m.runs is not None else "sdpa-padded")
        return attend(self, layer, q, k, v, window)

    def spy_step(*args):
        seen.append("native")
        return one_call(*args)

    monkeypatch.setattr(PagedAttention, "attend", spy)
    monkeypatch.setattr(native_layer, "decode_layers_forward", spy_step)
    _, _, engine = _run(tiny_path, name)
    assert engine.runner.decode_route == ROUTES[name]
    assert len(seen) >= 12 and set(seen) == {ROUTES[name]}


def test_cuda_graphs_replay_the_torch_route_not_the_native_kernels(tiny_path) -> None:
    _needs("native")
    with pytest.raises(ValueError, match="cuda_graphs replays the torch backend's decode route"):
        LLMEngine(EngineConfig(tiny_path, device="cpu", cuda_graphs=True, linear_kernels="panel"))


def test_an_odd_head_size_gets_no_native_backend(tiny_path) -> None:
    """No RoPE model has one (its rotation takes halves of a head); the native layer kernels would need it."""
    import dataclasses

    _needs("native")
    for kernels in ("auto", "panel"):
        model = load_model(tiny_path, device="cpu")
        model.cfg = dataclasses.replace(model.cfg, head_dim=model.cfg.head_dim + 1)  # only what `choose` reads
        if kernels == "panel":
            with pytest.raises(ValueError, match="even head size"):
                choose(model, kernels)
            continue
        choice = choose(model, kernels)
        assert choice.attention is None and model.decoder is torch_layers and "even head size" in (choice.note or "")
