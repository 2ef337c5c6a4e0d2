import math

import pytest

from advisor.sizing.tables import UnsupportedOp, load, source
from tests.advisor.sizing.small_tables import ctx_ms, gemm_ms, gen_ms, small_tables


def test_a_measured_point_is_returned_as_measured():
    t = small_tables()
    assert t.gemm_ms(256, 4096, 16, "bfloat16") == pytest.approx(gemm_ms(256, 4096, 16))
    assert t.context_attention_ms(8, 256, 32, 8, 128, False) == pytest.approx(ctx_ms(8, 256, 32))
    assert t.generation_attention_ms(1, 4096, 8, 8, 128, False) == pytest.approx(gen_ms(1, 4096, 8))


def test_between_points_the_time_lies_between_its_neighbours_and_rises_with_the_work():
    t = small_tables()
    lo, mid, hi = (t.gemm_ms(m, 4096, 4096, "bfloat16") for m in (256, 1024, 4096))
    assert lo < mid < hi
    # log-log interpolation: the geometric midpoint of m gets the geometric mean of the two times
    assert t.gemm_ms(1024, 4096, 4096, "bfloat16") == pytest.approx(math.sqrt(lo * hi))


def test_past_the_largest_size_the_time_grows_with_the_work():
    t = small_tables()
    assert t.gemm_ms(8192, 4096, 4096, "bfloat16") == pytest.approx(2 * t.gemm_ms(4096, 4096, 4096, "bfloat16"))
    # context attention is quadratic in the length, generation attention linear
    assert t.context_attention_ms(1, 8192, 8, 8, 128, False) == pytest.approx(4 * ctx_ms(1, 4096, 8))
    assert t.generation_attention_ms(1, 8192, 8, 8, 128, False) == pytest.approx(2 * gen_ms(1, 4096, 8))


def test_below_the_smallest_size_the_launch_bound_time_is_held():
    t = small_tables()
    assert t.generation_attention_ms(1, 4, 8, 8, 128, False) == pytest.approx(gen_ms(1, 16, 8))


def test_heads_between_measured_counts_are_interpolated():
    t = small_tables()
    v8, v16, v32 = (t.context_attention_ms(8, 256, nh, 8, 128, False) for nh in (8, 16, 32))
    assert v8 < v16 < v32


def test_all_reduce_is_zero_on_one_gpu_and_scales_to_an_unmeasured_degree():
    t = small_tables()
    assert t.allreduce_ms(1e6, 1) == 0.0
    assert t.allreduce_ms(1e6, 8) == pytest.approx(0.3)
    assert t.allreduce_ms(1e3, 2) < t.allreduce_ms(1e6, 2)  # a bigger message takes longer
    # TP 4 was not measured: the nearest degree (2), scaled by a ring's 2(n-1)/n of the message
    assert t.allreduce_ms(1e6, 4) == pytest.approx(0.1 * (3 / 4) / (1 / 2))


def test_a_dtype_the_table_lacks_is_named():
    with pytest.raises(UnsupportedOp, match="no fp8 GEMM measured on test_gpu"):
        small_tables().gemm_ms(1, 16, 16, "fp8")


def test_the_shipped_tables_load_and_say_where_they_come_from():
    assert "Apache-2.0" in source()["licence"] and len(source()["commit"]) == 40
    t = load("h200_sxm", "vllm")
    assert t.version == "0.24.0" and {"bfloat16", "fp8"} <= set(t.gemm_dtypes)
    # aiconfigurator's H200 measurement at this exact point (the packed value: float16 of the measured ms)
    assert t.gemm_ms(8192, 65536, 10240, "fp8") == pytest.approx(7.36, rel=0.01)
    with pytest.raises(UnsupportedOp, match="no trtllm tables for mi300x"):
        load("mi300x", "trtllm")
