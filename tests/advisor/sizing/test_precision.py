"""Bytes per weight and per KV element, and the rule that embeddings stay bf16 in quantized checkpoints."""

from __future__ import annotations

import pytest

from advisor.sizing.architecture import load_architecture
from advisor.sizing.errors import SizingError
from advisor.sizing.precision import precision, weight_bytes


def test_bytes_per_weight_include_the_block_scales():
    assert precision("bf16").weight_bytes == 2.0 and precision("fp8").weight_bytes == 1.0
    assert precision("fp4").weight_bytes == 0.5625  # NVFP4: 4 bits + an fp8 scale per 16
    assert precision("int4").weight_bytes == pytest.approx(0.52, abs=0.015)  # group 128, fp16 scale, 4-bit zero


def test_kv_bytes_and_operator_dtypes():
    assert [(p.kv_bytes, p.gemm_dtype, p.kv_dtype) for p in map(precision, ("bf16", "fp8", "fp4", "int4"))] == [
        (2.0, "bfloat16", "bfloat16"), (1.0, "fp8", "fp8"), (1.0, "nvfp4", "fp8"), (2.0, "int4_wo", "bfloat16")]


def test_embeddings_and_lm_head_stay_bf16():
    arch = load_architecture("Llama 3.1 8B")
    embeddings = 2 * 128256 * 4096
    assert weight_bytes(arch, precision("bf16")) == 2 * arch.n_params
    fp8 = weight_bytes(arch, precision("fp8"))
    assert fp8 == pytest.approx(arch.n_params + embeddings + 65 * 4096, rel=1e-12)  # + norms at 2 bytes
    assert fp8 / 1e9 == pytest.approx(9.08, abs=0.01)  # nvidia's FP8 8B checkpoint: about 9.1 GB


def test_an_unknown_precision_lists_the_four():
    with pytest.raises(SizingError, match="unknown precision 'int8': choose one of bf16, fp8, fp4, int4"):
        precision("int8")
    assert precision(" FP8 ").name == "fp8"
