"""The Triton paged decode kernel (own_engine.kernels.triton_decode), run on CPU by Triton's interpreter: its
attention equals the SDPA routes' (GQA, blocks out of order, unequal contexts, a head size that is not a power of
two, sliding windows), and an engine whose decode rows take it, eagerly and through the CUDA graphs' padded
buckets, gives the tokens of the SDPA routes. Nothing here compiles for a GPU (none is lent to the tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

# before Triton is first imported: it decides at import whether its kernels run interpreted
os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")


@pytest.mark.parametrize(("d", "hkv", "hq", "bs"), [(64, 2, 8, 16), (40, 2, 6, 4), (32, 4, 4, 8)])
@pytest.mark.parametrize("pages", [1, 2, None], ids=["1-block-a-loop", "2-blocks", "default"])
def test_the_kernel_attends_as_sdpa_over_each_rows_own_blocks(d, hkv, hq, bs, pages, monkeypatch) -> None:
    """Every way the context is cut: blocks per loop iteration, programs per row (`splits`, flash-decoding, with
    splits left empty by a short row or a window), windows that start mid-block."""
    from own_engine.kernels import triton_decode
    from own_engine.model.paged_attention import DecodeRun, decode_attention_runs

    if pages is not None:
        monkeypatch.setattr(triton_decode, "TOKENS_PER_ITER", bs * pages)
    gen = torch.Generator().manual_seed(d)
    kc, vc = (torch.randn(30, bs, hkv, d, generator=gen) for _ in range(2))
    tables = [[5, 2, 7, 11, 3], [1, 0, 8, 20, 21], [9, 10, 12, 13, 14]]
    lens = [bs * 4 + 3, 2, bs * 5]
    q = torch.randn(3, hq, d, generator=gen)
    for window in (None, 5, 1000):
        runs = [DecodeRun(n, block_ids=torch.tensor(t[: -(-n // bs)])) for t, n in zip(tables, lens, strict=True)]
        want = decode_attention_runs(0, q, kc, vc, runs, window)
        for splits in (None, 2, 3, 5):
            got = triton_decode.paged_decode_attention(q, kc, vc, torch.tensor(tables), torch.tensor(lens), window,
                                                       splits=splits)
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def test_bf16_inputs_give_sdpas_output_within_bf16_rounding() -> None:
    from own_engine.kernels.triton_decode import paged_decode_attention
    from own_engine.model.paged_attention import DecodeRun, decode_attention_runs

    gen = torch.Generator().manual_seed(3)
    kc, vc = (torch.randn(40, 16, 8, 64, generator=gen) for _ in range(2))  # llama-1b's heads
    tables, lens = [list(range(0, 20)), list(range(20, 40))], [300, 17]
    q = torch.randn(2, 32, 64, generator=gen)
    runs = [DecodeRun(n, block_ids=torch.tensor(t[: -(-n // 16)])) for t, n in zip(tables, lens, strict=True)]
    want = decode_attention_runs(0, q, kc, vc, runs)
    got = paged_decode_attention(q.bfloat16(), kc.bfloat16(), vc.bfloat16(), torch.tensor(tables),
                                 torch.tensor(lens), splits=3)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)


COMPILE = """
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from own_engine.kernels.triton_decode import _build


def sig(kernel, ints64=()):
    s = {a: ("*i64" if a in ints64 else "*bf16" if a.endswith("_ptr") else "fp32" if a == "scale"
             else "constexpr" if a.isupper() else "i32") for a in kernel.arg_names}
    return {**s, "m_ptr": "*fp32", "l_ptr": "*fp32", "acc_ptr": "*fp32"}


target = GPUTarget("cuda", 90, 32)
decode, combine = _build()
for splits in (1, 4):
    src = ASTSource(fn=decode, signature=sig(decode, ("tables_ptr", "lens_ptr")),
                    constexprs={"GROUP": 4, "GROUP_P2": 4, "BLOCK": 16, "PAGES": 4, "D": 64, "D_P2": 64,
                                "SPLITS": splits})
    assert "cubin" in triton.compile(src, target=target).asm
src = ASTSource(fn=combine, signature=sig(combine), constexprs={"SPLITS": 4, "SPLITS_P2": 4, "D": 64, "D_P2": 64})
assert "cubin" in triton.compile(src, target=target).asm
print("compiled")
"""


def test_the_kernels_compile_for_an_h100_without_one(tmp_path) -> None:
    """Triton's wheel carries ptxas: both kernels go to an sm90 cubin here, at llama-1b's shapes, with one program
    per row and with four, so a kernel only the interpreter accepts fails here, not on a lent GPU. In a process of
    its own: Triton decides at import whether it interprets."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(TRITON_CACHE_DIR=str(tmp_path), PYTHONPATH=str(Path(__file__).resolve().parents[3]))
    proc = subprocess.run([sys.executable, "-c", COMPILE], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "compiled" in proc.stdout, proc.stderr[-3000:]


@pytest.mark.parametrize("cuda_graphs", [False, True])
def test_an_engine_on_the_triton_route_gives_the_sdpa_routes_logits(tiny_path, cuda_graphs) -> None:
    """Every step's logits, not only the tokens: a random tiny model's argmax shrugs off an attention that reads
    one key too many."""
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams

    prompts = [[5 + i] * (3 + 17 * i) for i in range(4)]  # contexts of unequal lengths, across several blocks
    params = SamplingParams(max_tokens=6, ignore_eos=True)
    out, logits = {}, {}
    for attention in ("sdpa", "triton"):
        engine = LLMEngine(EngineConfig(tiny_path, device="cpu", linear_kernels="torch", cuda_graphs=cuda_graphs,
                           decode_attention=attention, max_num_seqs=4, max_num_batched_tokens=40, block_size=4))
        assert engine.runner.decode_route == ("triton" if attention == "triton" else "sdpa-padded" if cuda_graphs
                                              else "sdpa-runs")
        seen = logits[attention] = []
        sample = engine.runner.sampler.__call__

        def record(step_logits, seqs, sample=sample, seen=seen):
            seen.append(step_logits.clone())
            return sample(step_logits, seqs)

        engine.runner.sampler = record
        out[attention] = engine.generate(prompts, params)
    assert engine.describe()["decode_attention"] == "triton"
    assert out["triton"] == out["sdpa"]
    assert len(logits["triton"]) == len(logits["sdpa"]) >= 6
    for got, want in zip(logits["triton"], logits["sdpa"], strict=True):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_the_route_is_refused_in_one_line_where_it_cannot_run(tiny_path, monkeypatch) -> None:
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine

    monkeypatch.delenv("TRITON_INTERPRET")
    with pytest.raises(ValueError, match="decode_attention='triton' cannot run here: Triton compiles for a GPU"):
        LLMEngine(EngineConfig(tiny_path, device="cpu", linear_kernels="torch", decode_attention="triton"))
    with pytest.raises(ValueError, match="decode_attention must be 'sdpa' or 'triton'"):
        LLMEngine(EngineConfig(tiny_path, device="cpu", decode_attention="flash"))
