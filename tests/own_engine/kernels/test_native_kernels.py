"""own_engine's native kernels (own_engine.kernels.native, panel_linear, the native decode attention): PyTorch's
results at every shape, the same tokens as the other kernels, one OpenMP runtime, and a clear fallback where
they can't be built."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.sampling_params import SamplingParams
from own_engine.kernels.panel_linear import PanelLinear, pack_weight
from own_engine.model.llama import Linear

PROMPTS = [list(range(300, 341)), [(i * 31) % 900 + 50 for i in range(90)], [7]]


def test_packing_puts_each_output_where_the_layout_says() -> None:
    w = torch.arange(70 * 5, dtype=torch.float32).reshape(70, 5)
    packed = pack_weight(w, 64)
    assert packed.shape == (2, 5, 64)
    for n in (0, 63, 64, 69):
        for k in range(5):
            assert packed[n // 64, k, n % 64] == w[n, k]
    assert not packed[1, :, 6:].any()  # zeros past N


@pytest.mark.parametrize("n,k", [(1, 1), (15, 7), (17, 33), (64, 64), (100, 768), (1280, 1100), (130, 2048)])
@pytest.mark.parametrize("bias", [False, True])
def test_the_kernel_equals_f_linear_for_every_row_count(kernel, n, k, bias) -> None:
    gen = torch.Generator().manual_seed(n * 1000 + k)
    plain = Linear(k, n, bias, torch.float32)
    with torch.no_grad():
        plain.weight.copy_(torch.randn(n, k, generator=gen))
        if plain.bias is not None:
            plain.bias.copy_(torch.randn(n, generator=gen))
        panel = PanelLinear(plain, kernel)
        for rows in (1, 2, 5, 6, 7, 13, 64, 200):
            x = torch.randn(rows, k, generator=gen)
            torch.testing.assert_close(panel(x), plain(x), atol=1e-4 * k ** 0.5, rtol=1e-4)
        x3 = torch.randn(2, 3, k, generator=gen)[:, ::2]  # batched and not contiguous
        torch.testing.assert_close(panel(x3), F.linear(x3, plain.weight, plain.bias), atol=1e-4 * k ** 0.5, rtol=1e-4)
        assert panel(torch.randn(0, k)).shape == (0, n)


@pytest.mark.parametrize("preset", ["tiny-llama2", "tiny-qwen2"])  # untied head; q/k/v biases and a tied head
def test_an_engine_on_the_own_kernel_generates_what_the_others_do(kernel, tmp_path, preset) -> None:
    from model_cache.create import create_model

    path = create_model(preset, preset, root=tmp_path)
    engines = {k: LLMEngine(EngineConfig(path, device="cpu", max_num_seqs=4, linear_kernels=k)) for k in ("auto", "onednn", "torch")}
    assert engines["auto"].describe()["linear_kernels"] == "panel-avx512"
    assert engines["auto"].describe()["linear_kernel_note"] is None
    assert sum(isinstance(m, PanelLinear) for m in engines["auto"].model.modules()) == \
        engines["auto"].num_packed_linears > 0
    panels = [m.weight for m in engines["auto"].model.modules() if isinstance(m, PanelLinear)]
    arenas = {w.untyped_storage().data_ptr() for w in panels}
    assert len(arenas) == 1  # one arena for all packed weights, 2 MiB aligned: huge pages where the OS gives them
    assert min(w.data_ptr() for w in panels) % (2 << 20) == 0
    sp = SamplingParams(max_tokens=24, ignore_eos=True)
    out = {k: e.generate(PROMPTS, sp) for k, e in engines.items()}
    assert out["auto"] == out["onednn"] == out["torch"]


_PROBE = """
import torch
from own_engine.kernels.backends import native_kernels
from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
engine = LLMEngine(EngineConfig({path!r}, device="cpu", max_num_seqs=2))
print(engine.linear_kernels)
print(engine.linear_kernel_note)
maps = open("/proc/self/maps").read().split()
print(sorted({{p for p in maps if "libgomp" in p}}))
try:
    LLMEngine(EngineConfig({path!r}, device="cpu", max_num_seqs=2, linear_kernels="panel"))
    print("no error")
except ValueError as e:
    print(e)
"""


def _probe(path, home, cc: str | None) -> list[str]:
    env = {**os.environ, "ADVISOR_HOME": str(home)}
    env.pop("CC", None)
    if cc is not None:
        env["CC"] = cc
    return subprocess.run([sys.executable, "-c", _PROBE.format(path=str(path))], env=env, check=True,
                          capture_output=True, text=True, timeout=300).stdout.splitlines()


def test_the_kernel_runs_on_torchs_own_openmp_runtime(kernel, tmp_path) -> None:
    from model_cache.create import create_model

    path = create_model("m", "tiny-llama2", root=tmp_path)
    kernels, note, gomps, named = _probe(path, tmp_path / "home", None)
    assert (kernels, note, named) == ("panel-avx512", "None", "no error")
    assert len(eval(gomps)) == 1, gomps  # one libgomp mapped: the kernel's threads are torch's threads
    assert list((tmp_path / "home" / "kernels").glob("own_engine-*.so"))  # built into the cache


@pytest.mark.parametrize("cc,says", [("no-such-compiler-here", "no C compiler"), ("false", "failed")])
def test_without_a_working_compiler_the_engine_keeps_onednn_and_says_why(kernel, tmp_path, cc, says) -> None:
    from model_cache.create import create_model

    path = create_model("m", "tiny-llama2", root=tmp_path)
    kernels, note, _, named = _probe(path, tmp_path / "home", cc)
    assert kernels in ("onednn-packed", "torch")
    assert says in note and says in named and named.startswith("linear_kernels=panel: ")
    assert not list((tmp_path / "home").glob("kernels/*.so"))


def test_a_build_racing_another_leaves_one_whole_kernel(kernel, tmp_path) -> None:
    code = "from own_engine.kernels.backends import native_kernels; k = native_kernels(); print(type(k).__name__)"
    env = {**os.environ, "ADVISOR_HOME": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    assert [p.communicate(timeout=300)[0].strip() for p in procs] == ["NativeKernels"] * 3
    assert len(list((tmp_path / "kernels").iterdir())) == 1  # no temporary folders left behind


# head sizes 16-128 in registers, in groups of up to 4 heads (2 at 128): groups of 3, 1, 8 (two tasks), 6 (three),
# 2, 1; any other head size (8, 40) one head per task
@pytest.mark.parametrize("hq,hkv,d", [(12, 4, 64), (8, 8, 128), (16, 2, 64), (6, 1, 128), (4, 2, 32), (2, 2, 16),
                                      (6, 2, 8), (4, 1, 40)])
@pytest.mark.parametrize("window", [None, 7, 300])
def test_native_decode_attention_equals_sdpa_per_sequence(kernel, hq, hkv, d, window) -> None:
    from own_engine.model.paged_attention import (
        DecodeRun,
        PagedMeta,
        decode_attention_runs,
        native_decode_attention,
    )

    gen = torch.Generator().manual_seed(hq * d)
    blocks, block_size = 80, 16
    kc, vc = (torch.randn(blocks, block_size, hkv, d, generator=gen) * 3 for _ in range(2))
    lens = [1, 17, 500, 1000, 64]
    order = torch.randperm(blocks, generator=gen).tolist()  # blocks out of order, as a busy cache hands them out
    tables, at = [], 0
    for n in lens:
        need = -(-n // block_size)
        tables.append(order[at:at + need])
        at = (at + need) % (blocks - 64)
    width = max(map(len, tables))
    q = torch.randn(len(lens), hq, d, generator=gen)
    meta = PagedMeta(slot_mapping=torch.zeros(0, dtype=torch.long), num_decodes=len(lens),
                     block_tables=torch.tensor([t + [0] * (width - len(t)) for t in tables]), lens=torch.tensor(lens))
    want = decode_attention_runs(0, q, kc, vc, [DecodeRun(n, block_ids=torch.tensor(t))
                                                for t, n in zip(tables, lens, strict=True)], window)
    torch.testing.assert_close(native_decode_attention(kernel, q, kc, vc, meta, window), want, atol=1e-5, rtol=1e-4)
