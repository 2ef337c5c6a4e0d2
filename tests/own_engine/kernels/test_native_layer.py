"""own_engine's decoder layer on native kernels (own_engine.kernels.native_layer, kernels/layer_ops.c,
chunk_attention.c and decode_step.c): each kernel against PyTorch at shapes with tails, the engine's layers
against the PyTorch layer and transformers, with the native paths shown to be the ones that ran, and the
one-call decode step against the per-layer path."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.sampling_params import SamplingParams
from own_engine.kernels.panel_linear import PanelLinear
from own_engine.model.llama import Linear
from own_engine.model.paged_attention import ChunkMeta, chunk_attention, native_chunk_attention
from own_engine.model.rope import apply_rope
from tests.own_engine.conftest import hf_logits
from tests.own_engine.model.test_correctness import ATOL, LogitRecorder


@pytest.mark.parametrize("hq,hkv,d", [(12, 4, 64), (8, 8, 128), (6, 2, 8), (4, 1, 40), (16, 2, 64)])
# contexts of every kind against the kernel's 32-key steps from a 16-aligned key: 32 and 64 exactly (the padding
# at its tightest), one past, and others
@pytest.mark.parametrize("n,cached", [(1, 0), (7, 0), (100, 0), (1, 40), (16, 16), (31, 33), (33, 300), (90, 1000)])
@pytest.mark.parametrize("window", [None, 7, 300])
def test_native_chunk_attention_equals_sdpa(kernel, hq, hkv, d, n, cached, window) -> None:
    gen = torch.Generator().manual_seed(hq * d + n + cached)
    blocks, block_size = 90, 16
    kc, vc = (torch.randn(blocks, block_size, hkv, d, generator=gen) * 3 for _ in range(2))
    ctx = cached + n
    table = torch.randperm(blocks, generator=gen)[: -(-ctx // block_size)]  # blocks out of order
    slots = torch.tensor([int(table[p // block_size]) * block_size + p % block_size for p in range(cached, ctx)])
    k, v = kc.view(-1, hkv, d)[slots], vc.view(-1, hkv, d)[slots]
    qkv = torch.randn(n, hq + 2 * hkv, d, generator=gen) * 3
    q = qkv[:, :hq]  # a view at the qkv projection's row stride, as the engine passes it
    meta = ChunkMeta(0, n, cached, block_ids=table)
    if cached:
        meta.mask = torch.arange(ctx)[None, :] <= torch.arange(cached, ctx)[:, None]
    exact = chunk_attention(q.double(), k.double(), v.double(), kc.double(), vc.double(), meta, window)
    sdpa_error = (chunk_attention(q, k, v, kc, vc, meta, window) - exact).abs().max().item()
    out = torch.full((n + 2, hq, d), float("nan"))
    got = native_chunk_attention(kernel, q, kc, vc, meta, window, out[1:n + 1])
    # peaked softmaxes (scores of ~10): fp32 rounding alone moves outputs by ~1e-5 at head size 16, in SDPA too,
    # and a D-term dot product's rounding grows as sqrt(D) (at D=128, n=16 after 16 cached, SDPA's error is 1.3e-5
    # and the kernel's 3.8e-5, the same as the kernel before the 32-key steps gave)
    assert (got - exact).abs().max().item() <= 2 * sdpa_error + 1e-5 * (d / 16) ** 0.5
    assert out[0].isnan().all() and out[n + 1].isnan().all()  # wrote its rows only


@pytest.mark.parametrize("rows", [1, 3, 100])  # 100 x 768: past the threshold where the ops go parallel
def test_rms_norm_and_silu_mul_equal_pytorch(kernel, rows) -> None:
    gen = torch.Generator().manual_seed(rows)
    for h in (768, 40, 5):
        x, w = torch.randn(rows, h, generator=gen) * 5, torch.randn(h, generator=gen)
        out = torch.empty_like(x)
        kernel.lib.rms_norm(x.data_ptr(), w.data_ptr(), out.data_ptr(), rows, h, 1e-6, torch.get_num_threads())
        torch.testing.assert_close(out, F.rms_norm(x, (h,), w, 1e-6), atol=1e-5, rtol=1e-5)
    for i in (2048, 37):
        gate_up = torch.randn(rows, 2 * i, generator=gen) * 20  # far into both tails of SiLU
        act = torch.empty(rows, i)
        kernel.lib.silu_mul(gate_up.data_ptr(), act.data_ptr(), rows, i, torch.get_num_threads())
        torch.testing.assert_close(act, F.silu(gate_up[:, :i]) * gate_up[:, i:], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("rows", [1, 5, 200])
@pytest.mark.parametrize("hq,hkv,d", [(12, 4, 64), (6, 2, 8), (2, 1, 40)])
def test_rope_store_rotates_as_apply_rope_and_writes_the_cache(kernel, rows, hq, hkv, d) -> None:
    from model_cache.config import ModelConfig
    from own_engine.model.rope import rope_cache

    cfg = ModelConfig.from_dict(dict(hidden_size=hq * d, num_attention_heads=hq, num_key_value_heads=hkv,
                                     head_dim=d, intermediate_size=8, num_hidden_layers=1, vocab_size=10,
                                     rope_theta=10000.0, rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                                                       "original_max_position_embeddings": 64}))
    rope = rope_cache(cfg, 512)
    gen = torch.Generator().manual_seed(rows * d)
    qkv = torch.randn(rows, (hq + 2 * hkv) * d, generator=gen)
    positions = torch.randint(0, 512, (rows,), generator=gen)
    slots = torch.randperm(rows + 9, generator=gen)[:rows]
    cs = rope[positions]
    want = apply_rope(qkv[:, : (hq + hkv) * d].view(rows, hq + hkv, d), cs[:, :1], cs[:, 1:])
    want_v = qkv[:, (hq + hkv) * d:].view(rows, hkv, d).clone()
    kc, vc = torch.zeros(rows + 9, hkv, d), torch.zeros(rows + 9, hkv, d)
    kernel.lib.rope_store(qkv.data_ptr(), rows, hq, hkv, d, rope.data_ptr(), positions.data_ptr(), slots.data_ptr(),
                          kc.data_ptr(), vc.data_ptr(), torch.get_num_threads())
    rotated = qkv[:, : (hq + hkv) * d].view(rows, hq + hkv, d)
    torch.testing.assert_close(rotated, want, atol=1e-5, rtol=1e-5)
    assert torch.equal(kc[slots], rotated[:, hq:]) and torch.equal(vc[slots], want_v)
    untouched = torch.ones(rows + 9, dtype=torch.bool)
    untouched[slots] = False
    assert not kc[untouched].any() and not vc[untouched].any()


@pytest.mark.parametrize("bias", [False, True])
def test_a_panel_linear_adds_into_its_output(kernel, bias) -> None:
    gen = torch.Generator().manual_seed(1)
    plain = Linear(1100, 70, bias, torch.float32)  # K past one k block, N past one group
    with torch.no_grad():
        plain.weight.copy_(torch.randn(70, 1100, generator=gen))
        if plain.bias is not None:
            plain.bias.copy_(torch.randn(70, generator=gen))
        panel = PanelLinear(plain, kernel)
        for rows in (1, 7, 50):
            x, y = torch.randn(rows, 1100, generator=gen), torch.randn(rows, 70, generator=gen)
            want = y + plain(x)
            panel.add_to(x, y)
            torch.testing.assert_close(y, want, atol=1e-3, rtol=1e-4)


def _spy_native_paths(monkeypatch) -> dict[str, list]:
    """Counts the native layer paths as they run: the per-layer one (a layer index per call) and the one-call
    decode step."""
    import own_engine.kernels.native_layer as native_layer

    calls: dict[str, list] = {"layer": [], "decode_step": []}
    layer, step = native_layer.layer_forward, native_layer.decode_layers_forward

    def spy_layer(*args):
        calls["layer"].append(args[2])
        return layer(*args)

    def spy_step(*args):
        calls["decode_step"].append(args[2].shape[0])
        return step(*args)

    monkeypatch.setattr(native_layer, "layer_forward", spy_layer)
    monkeypatch.setattr(native_layer, "decode_layers_forward", spy_step)
    return calls


@pytest.mark.parametrize("preset", ["tiny-llama2", "tiny-qwen2", "tiny-mistral"])  # plain; q/k/v bias; window
def test_the_engine_runs_its_layers_natively_and_as_transformers_does(kernel, tmp_path, monkeypatch, preset) -> None:
    """Decodes beside prefill chunks (a 12-token budget cuts prompts into chunks), then decode-only steps,
    prompts past Mistral's 64-token window: the native layers' logits (both paths) equal transformers' and the
    PyTorch layers' tokens."""
    from model_cache.create import create_model

    transformers = pytest.importorskip("transformers")
    path = create_model(preset, preset, root=tmp_path)
    calls = _spy_native_paths(monkeypatch)
    prompts = [list(range(5, 75)), [9, 8, 7], list(range(200, 290, 2))]
    params = SamplingParams(max_tokens=16, ignore_eos=True)
    native = LLMEngine(EngineConfig(path, device="cpu", max_num_seqs=3, block_size=4, max_num_batched_tokens=12))
    rec = LogitRecorder(native)
    out = native.generate(prompts, params)
    assert set(calls["layer"]) == set(range(native.config.num_hidden_layers))  # steps with chunks
    assert set(calls["decode_step"]) >= {1, 3}  # decode-only steps, of one row and of all three
    before = len(calls["layer"]) + len(calls["decode_step"])
    plain = LLMEngine(EngineConfig(path, device="cpu", max_num_seqs=3, block_size=4, max_num_batched_tokens=12,
                      linear_kernels="torch"))
    assert plain.generate(prompts, params) == out  # the PyTorch layers: same tokens
    assert len(calls["layer"]) + len(calls["decode_step"]) == before
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
    by_seq = sorted({sid for sid, _, _ in rec.rows})
    for prompt, tokens, sid in zip(prompts, out, by_seq, strict=True):
        ref = hf_logits(hf, prompt + tokens)
        for _, n, row in (r for r in rec.rows if r[0] == sid):
            torch.testing.assert_close(row, ref[n - 1], atol=ATOL, rtol=0)


@pytest.mark.parametrize("preset", ["tiny-qwen2", "tiny-mistral"])  # biases and tied embeddings; a window
def test_a_decode_step_in_one_call_equals_the_per_layer_path_bit_for_bit(kernel, tmp_path, monkeypatch,
                                                                         preset) -> None:
    """kernels/decode_step.c shares out the per-layer kernels' own units of work (kernel_parts.h), so every
    logit of every decode step is the same float, at 1, 2 and 4 rows of unequal contexts (past the window)."""
    import own_engine.kernels.native_layer as native_layer
    from model_cache.create import create_model

    path = create_model(preset, preset, root=tmp_path)
    prompts = [list(range(5, 95)), [9, 8, 7], list(range(200, 290, 2)), list(range(40, 47))]
    params = [SamplingParams(max_tokens=n, ignore_eos=True) for n in (24, 6, 12, 30)]
    logits = []
    for one_call in (True, False):
        if not one_call:
            monkeypatch.setattr(native_layer, "decode_layers_forward", native_layer.layer_by_layer)
        engine = LLMEngine(EngineConfig(path, device="cpu", max_num_seqs=4, block_size=4))
        rec = LogitRecorder(engine)
        engine.generate(prompts, params)
        first = min(sid for sid, _, _ in rec.rows)  # sequence ids count on across engines
        logits.append([(sid - first, n, row) for sid, n, row in rec.rows])
    ones, layered = logits
    assert len(ones) == len(layered) == 72
    for (sid, n, a), (sid2, n2, b) in zip(ones, layered, strict=True):
        assert (sid, n) == (sid2, n2) and torch.equal(a, b), (sid, n)


def test_a_peaked_softmax_and_silu_tails_equal_pytorch(kernel) -> None:
    """Scores 240 apart: the kernels' exp gives 0 below -87.3 instead of a denormal (denormals made decode
    attention 2-3x slower in the engine), and only there: the result still equals SDPA's, as does SiLU's far
    into both tails."""
    from own_engine.model.paged_attention import (
        DecodeRun,
        PagedMeta,
        decode_attention_runs,
        native_decode_attention,
    )

    gen = torch.Generator().manual_seed(5)
    kc, vc = torch.randn(4, 16, 1, 16, generator=gen), torch.randn(4, 16, 1, 16, generator=gen)
    kc[:, :, :, 1:] = 0
    kc[:, :, :, 0] = torch.linspace(-30, 30, 64).view(4, 16, 1)  # scores q.k / 4 from -120 to 120
    q = torch.zeros(1, 1, 16)
    q[0, 0, 0] = 16.0
    table = torch.tensor([[2, 0, 3, 1]])
    meta = PagedMeta(slot_mapping=torch.zeros(0, dtype=torch.long), num_decodes=1, block_tables=table,
                     lens=torch.tensor([64]))
    want = decode_attention_runs(0, q, kc, vc, [DecodeRun(64, block_ids=table[0])])
    torch.testing.assert_close(native_decode_attention(kernel, q, kc, vc, meta), want, atol=1e-6, rtol=1e-5)
    gate_up = torch.tensor([[-100.0, -90.0, 50.0, 100.0, 1.0, 1.0, 1.0, 1.0]])
    act = torch.empty(1, 4)
    kernel.lib.silu_mul(gate_up.data_ptr(), act.data_ptr(), 1, 4, torch.get_num_threads())
    torch.testing.assert_close(act, F.silu(gate_up[:, :4]), atol=1e-30, rtol=1e-6)


def test_a_nan_reaches_the_output_as_in_sdpa(kernel) -> None:
    """A NaN score is not dropped as weight 0 (it would hide upstream corruption): the output is NaN, as SDPA's.
    On 50 seeds: the exp clamped a NaN to e^88 until it kept NaN, and then about one input in eight (the sum of
    weights overflowing to inf, the output 0 where the weighted values stayed finite) came out with a number."""
    from own_engine.model.paged_attention import PagedMeta, native_decode_attention

    gen = torch.Generator().manual_seed(0)
    for _ in range(50):
        kc, vc = torch.randn(2, 16, 1, 64, generator=gen), torch.randn(2, 16, 1, 64, generator=gen)
        q = torch.randn(1, 2, 64, generator=gen)
        q[0, 1, 3] = float("nan")
        meta = PagedMeta(slot_mapping=torch.zeros(0, dtype=torch.long), num_decodes=1,
                         block_tables=torch.tensor([[1, 0]]), lens=torch.tensor([20]))
        out = native_decode_attention(kernel, q, kc, vc, meta)
        assert out[0, 1].isnan().all() and not out[0, 0].isnan().any()
        c = ChunkMeta(0, 1, 19, block_ids=torch.tensor([1, 0]))
        assert native_chunk_attention(kernel, q, kc, vc, c)[0, 1].isnan().all()
