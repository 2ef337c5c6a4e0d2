import math

import pytest

from advisor.catalog import load_catalog
from advisor.sizing.architecture import load_architecture
from advisor.sizing.backtest import base_profile
from advisor.sizing.errors import SizingError
from advisor.sizing.estimate import Load, estimate, resolve_gpu
from advisor.sizing.precision import precision

CAT = load_catalog()
L70 = load_architecture("Llama 3.3 70B")


def _est(hw: str, tp: int, engine: str, prec: str, load: Load, arch=L70, isl: int = 1024, osl: int = 1024):
    return estimate(arch, resolve_gpu(hw, CAT), tp, engine, precision(prec), isl, osl, load)


def test_an_estimate_on_a_gpu_with_tables_carries_its_basis_and_a_range_around_it():
    e = _est("h200", 1, "vllm", "fp8", Load(concurrency=32))
    assert e.estimated and e.basis == "tables" and "h200_sxm tables of vllm 0.24.0" in e.basis_note
    for k in ("ttft_ms", "tpot_ms", "output_tok_s", "requests_per_s"):
        lo, hi = e.range[k]
        assert lo < getattr(e, k) < hi and all(map(math.isfinite, (lo, hi)))
    assert "leave-one-GPU-out" in e.error_note and e.max_concurrency > 32


def test_a_gpu_without_tables_is_transferred_and_says_from_where():
    e = _est("mi300x", 1, "vllm", "fp8", Load(concurrency=8))
    assert e.basis == "transferred" and "h200_sxm" in e.basis_note and "transfer" in e.error_note


def test_what_cannot_be_estimated_says_why_in_one_line():
    cases = [(_est("l4", 1, "vllm", "bf16", Load(concurrency=1)), "needs"),
             (_est("mi300x", 1, "trtllm", "fp8", Load(concurrency=1)), "no claim to run on rocm"),
             (_est("h200", 2, "own", "bf16", Load(concurrency=1)), "no tensor parallelism"),
             (_est("a100-80gb", 2, "vllm", "fp8", Load(concurrency=1)), "cannot be estimated: no fp8 GEMM"),
             (_est("aws-m7i-8xlarge", 1, "vllm", "bf16", Load(concurrency=1)), "no claim to run on cpu-x86")]
    for e, words in cases:
        assert not e.estimated and words in e.why and "\n" not in e.why and e.ttft_ms is None


def test_a_rate_is_met_by_the_concurrency_that_serves_it_or_said_to_need_replicas():
    e = _est("b200", 8, "trtllm", "fp8", Load(rate=2.0))
    assert e.why is None and e.requests_per_s == pytest.approx(2.0, rel=0.02)
    over = _est("h200", 1, "vllm", "fp8", Load(rate=500.0))
    assert over.fits and "add replicas" in over.why and over.requests_per_s < 500


def test_own_engine_is_bounded_by_its_measured_host_time():
    small = load_architecture("SmolLM2 135M")
    on = {hw: _est(hw, 1, "own", "bf16", Load(concurrency=1), arch=small, isl=128, osl=128) for hw in ("h100-sxm", "b200")}
    assert on["h100-sxm"].tpot_ms == pytest.approx(on["b200"].tpot_ms)  # the host sets it, not the GPU
    own = base_profile("own")  # one request decoding: the host's floor and one sequence's share
    decode_step = own.host_floor_ms + own.host_ms_per_seq
    assert decode_step <= on["b200"].tpot_ms < 1.1 * decode_step  # 1 in 128 steps also carries the next prompt


def test_bad_input_is_one_clear_error():
    with pytest.raises(SizingError, match="give one load"):
        Load()
    with pytest.raises(SizingError, match="unknown GPU 'h999'"):
        resolve_gpu("h999", CAT)
    with pytest.raises(SizingError, match="unknown engine"):
        _est("h200", 1, "tgi", "fp8", Load(concurrency=1))


@pytest.mark.parametrize("hw", ["b300", "mi355x", "h100-nvl", "mi325x"])
def test_the_newer_catalog_gpus_without_tables_are_transferred_by_their_peaks(hw):
    e = _est(hw, 1, "vllm", "fp8", Load(concurrency=8))
    assert e.basis == "transferred" and "transfer" in e.error_note and e.hardware == hw


def test_the_newer_catalog_parts_that_cannot_be_estimated_say_why_in_one_line():
    cases = [(_est("gaudi3", 1, "vllm", "bf16", Load(concurrency=1)), "no claim to run on intel-gpu"),
             # the nearest measured GPU by peaks is the A100, whose tables have no FP8 GEMM
             (_est("rtx-pro-6000", 1, "vllm", "fp8", Load(concurrency=1)), "no fp8 GEMM measured on a100_sxm"),
             (_est("a10g", 1, "vllm", "fp8", Load(concurrency=1)), "use TP 4, or a larger GPU")]
    for e, words in cases:
        assert not e.estimated and words in e.why and "\n" not in e.why, (e.hardware, e.why)
    assert resolve_gpu("gb200", CAT).table == "gb200"  # the catalog entry and the measured tables are one GPU
