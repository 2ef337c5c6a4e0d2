import pytest

from advisor.sizing.tables import UnsupportedOp
from advisor.sizing.transfer import Peaks, TransferredOps, measured_peaks, nearest_measured
from tests.advisor.sizing.small_tables import small_tables

SRC = Peaks("src", 100.0, None, None, 1000.0, 100.0)


def test_a_transfer_to_the_same_peaks_changes_nothing():
    t = small_tables()
    same = TransferredOps(t, SRC, SRC)
    assert same.gemm_ms(4096, 4096, 4096, "bfloat16") == pytest.approx(t.gemm_ms(4096, 4096, 4096, "bfloat16"))
    assert same.allreduce_ms(1e6, 2) == pytest.approx(t.allreduce_ms(1e6, 2))


def test_each_operator_scales_by_the_peak_that_bounds_it():
    t = small_tables()
    more_bw = TransferredOps(t, SRC, Peaks("bw", 100.0, None, None, 2000.0, 100.0))
    more_flops = TransferredOps(t, SRC, Peaks("fl", 200.0, None, None, 1000.0, 100.0))
    # generation attention reads the KV cache: bandwidth; context attention computes: FLOPs
    assert more_bw.generation_attention_ms(8, 4096, 8, 8, 128, False) == pytest.approx(
        t.generation_attention_ms(8, 4096, 8, 8, 128, False) / 2)
    assert more_flops.context_attention_ms(8, 4096, 8, 8, 128, False) == pytest.approx(
        t.context_attention_ms(8, 4096, 8, 8, 128, False) / 2)
    # a big GEMM is compute-bound, a one-row GEMM reads its weights
    assert more_flops.gemm_ms(4096, 4096, 4096, "bfloat16") == pytest.approx(
        t.gemm_ms(4096, 4096, 4096, "bfloat16") / 2)
    assert more_bw.gemm_ms(1, 4096, 4096, "bfloat16") == pytest.approx(t.gemm_ms(1, 4096, 4096, "bfloat16") / 2,
                                                                        rel=0.01)


def test_a_slower_link_slows_the_all_reduce_above_its_fixed_latency():
    t = small_tables()
    slow_link = TransferredOps(t, SRC, Peaks("pcie", 100.0, None, None, 1000.0, 10.0))
    fixed = t.allreduce_ms(1.0, 2)
    assert slow_link.allreduce_ms(1e6, 2) == pytest.approx(fixed + (t.allreduce_ms(1e6, 2) - fixed) * 10)
    no_link = TransferredOps(t, SRC, Peaks("?", 100.0, None, None, 1000.0, None))
    with pytest.raises(UnsupportedOp, match="GPU-to-GPU bandwidth unknown"):
        no_link.allreduce_ms(1e6, 2)


def test_tensor_cores_a_gpu_lacks_are_named():
    t = small_tables()
    with pytest.raises(UnsupportedOp, match="no fp8 GEMM measured"):
        TransferredOps(t, SRC, SRC).gemm_ms(16, 16, 16, "fp8")


def test_the_nearest_measured_gpu_is_the_one_with_the_closest_peaks():
    pcie = Peaks("h100-pcie", 756.0, 1513.0, None, 2000.0, 64.0)
    assert nearest_measured(pcie, "vllm") in ("h100_sxm", "a100_sxm")
    assert nearest_measured(measured_peaks("h200_sxm"), "vllm", exclude="h200_sxm") == "h100_sxm"
