from dataclasses import replace

import pytest

from advisor.sizing.architecture import load_architecture
from advisor.sizing.serving import EngineProfile, combine, steady_state, terms
from advisor.sizing.step import Parallel, step_parts
from advisor.sizing.transfer import Peaks, TransferredOps
from tests.advisor.sizing.small_tables import small_tables

ARCH = load_architecture("Llama 3.1 8B")
P1 = Parallel(ARCH, 1, "bfloat16", False)
ENGINE = EngineProfile("test", token_budget=2048, max_batch=256, host_ms=0.5, ttft_ms=20.0, sync=0.5)
SLOW = Peaks("slow", 100.0, None, None, 1000.0, 100.0)
FAST = Peaks("fast", 1000.0, None, None, 10_000.0, 100.0)  # ten times every peak


def test_a_step_is_the_sum_of_its_parts_and_tp_adds_all_reduces():
    t = small_tables()
    one = step_parts(t, P1, decode=8, context=512)
    two = step_parts(t, Parallel(ARCH, 2, "bfloat16", False), decode=8, context=512)
    assert one.allreduce_ms == 0 and two.allreduce_ms > 0
    assert one.total_ms == pytest.approx(one.gemm_ms + one.attention_ms + one.allreduce_ms + one.lm_head_ms)
    assert two.gemm_ms < one.gemm_ms  # each GPU holds half of every layer


def test_littles_law_holds_and_more_requests_in_flight_serve_more():
    t = small_tables()
    s8, s64 = (steady_state(t, P1, ENGINE, 512, 256, c, 1000) for c in (8, 64))
    for s in (s8, s64):
        assert s.requests_per_s == pytest.approx(s.running / ((s.ttft_ms + 255 * s.tpot_ms) / 1000))
        assert s.output_tok_s == pytest.approx(s.requests_per_s * 256)
    assert s64.requests_per_s > s8.requests_per_s and s64.tpot_ms > s8.tpot_ms


def test_requests_the_kv_cache_cannot_hold_wait_for_a_slot():
    t = small_tables()
    held, over = (steady_state(t, P1, ENGINE, 512, 256, c, 16) for c in (16, 32))
    assert over.running == 16 and over.tpot_ms == pytest.approx(held.tpot_ms)
    # 16 more requests wait a whole turn of the 16 running ones
    assert over.ttft_ms == pytest.approx(held.ttft_ms + 16 / held.requests_per_s * 1000)


def test_prompts_that_arrive_in_one_wave_wait_for_each_other():
    t = small_tables()
    alone = steady_state(t, P1, replace(ENGINE, sync=0.0), 1024, 256, 32, 1000)
    wave = steady_state(t, P1, replace(ENGINE, sync=1.0), 1024, 256, 32, 1000)
    assert wave.ttft_ms > alone.ttft_ms and wave.tpot_ms == pytest.approx(alone.tpot_ms)


def test_a_host_bound_engine_is_not_made_faster_by_a_faster_gpu():
    t = small_tables()
    host_bound = EngineProfile("own", 2048, 64, host_floor_ms=50.0, host_ms_per_seq=0.1)
    device_bound = EngineProfile("dev", 2048, 64)
    on = {name: TransferredOps(t, SLOW, dst) for name, dst in (("slow", SLOW), ("fast", FAST))}
    hb = {k: steady_state(ops, P1, host_bound, 512, 128, 16, 1000) for k, ops in on.items()}
    db = {k: steady_state(ops, P1, device_bound, 512, 128, 16, 1000) for k, ops in on.items()}
    assert hb["fast"].tpot_ms == pytest.approx(hb["slow"].tpot_ms) == pytest.approx(50.0 + 0.1 * 16)
    assert db["fast"].tpot_ms < db["slow"].tpot_ms / 5


def test_the_fit_and_the_estimate_share_one_formula():
    t = small_tables()
    tm = terms(t, P1, ENGINE, 2048, 128, 24, 1000)
    assert combine(tm, ENGINE) == steady_state(t, P1, ENGINE, 2048, 128, 24, 1000)
