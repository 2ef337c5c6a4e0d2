"""Capacity from synthetic sweeps: the highest rate meeting every SLO, and when to stop."""

from __future__ import annotations

from advisor.sweep.capacity import SweepPoint, capacity_from_sweep, stop_reason


def pt(rate: float, ok: bool = True, status: str = "VALID", achieved: float | None = None,
       error_rate: float = 0.0) -> SweepPoint:
    return SweepPoint(rate_rps=rate, run_id=f"r{rate}", status=status, slo_met={"ttft": ok, "tpot": True, "e2e": None},
                      error_rate=error_rate, achieved_rps=rate if achieved is None else achieved, goodput_rps=rate)


def test_capacity_is_highest_passing_rate_below_first_failure():
    cap = capacity_from_sweep([pt(0.5), pt(1), pt(2), pt(4, ok=False), pt(8, ok=False)])
    assert cap.capacity_rps == 2
    assert cap.first_failure is not None and cap.first_failure.rate_rps == 4
    assert "TTFT SLO missed" in cap.reason


def test_order_does_not_matter_and_noise_above_failure_is_not_trusted():
    cap = capacity_from_sweep([pt(4), pt(1), pt(2, ok=False)])
    assert cap.capacity_rps == 1
    assert "noise" in cap.reason


def test_nothing_passes_and_everything_passes():
    none = capacity_from_sweep([pt(1, ok=False), pt(2, ok=False)])
    assert none.capacity_rps is None and "lowest step, 1 req/s" in none.reason
    allp = capacity_from_sweep([pt(1), pt(2)])
    assert allp.capacity_rps == 2 and "at least" in allp.reason


def test_saturated_failed_or_erroring_steps_do_not_count():
    assert capacity_from_sweep([pt(1), pt(2, status="SATURATED")]).capacity_rps == 1
    assert capacity_from_sweep([pt(1), pt(2, status="FAILED")]).capacity_rps == 1
    assert capacity_from_sweep([pt(1), pt(2, error_rate=0.2)]).capacity_rps == 1


def test_a_valid_step_is_not_second_guessed_by_its_nominal_rate():
    """The verdict compares completions with the arrivals that really happened: Poisson noise is not saturation."""
    few = SweepPoint(rate_rps=0.5, run_id="r", status="VALID", slo_met={"ttft": True}, error_rate=0.0,
                     achieved_rps=0.33, goodput_rps=0.33, n_requests=400)
    assert few.passes and not few.saturated and stop_reason([few]) is None
    sat = SweepPoint(**{**few.to_dict(), "status": "SATURATED", "reasons": ()})
    assert not sat.passes and stop_reason([sat]).startswith("saturated at 0.5 req/s")


def test_stop_rules():
    assert stop_reason([pt(1), pt(2)]) is None
    assert "clearly past saturation" in stop_reason([pt(1), pt(8, achieved=2.0)])
    assert "saturated" in stop_reason([pt(1), pt(2, ok=False, status="SATURATED")])
    assert "two steps in a row" in stop_reason([pt(1), pt(2, ok=False), pt(4, ok=False)])
    assert stop_reason([pt(1), pt(2, ok=False)]) is None  # one SLO miss without saturation: confirm at the next rate


def test_with_no_slo_set_the_reason_never_says_the_slos_were_met():
    # a fitted scenario leaves its SLOs unset: its sweep said "every step up to 80 req/s met the SLOs"
    def free(rate: float, status: str = "VALID") -> SweepPoint:
        return SweepPoint(rate_rps=rate, run_id=f"r{rate}", status=status,
                          slo_met={"ttft": None, "tpot": None, "e2e": None}, error_rate=0.0, achieved_rps=rate,
                          goodput_rps=rate)

    allp = capacity_from_sweep([free(40), free(80)])
    assert allp.capacity_rps == 80 and "SLO" not in allp.reason.split("(no SLO is set")[0]
    assert allp.reason.startswith("every step up to 80 req/s stayed VALID (no SLO is set: latency was not judged")
    some = capacity_from_sweep([free(40), free(80, status="SATURATED")])
    assert some.reason.startswith("stays VALID at 40 req/s (no SLO is set") and "fails at 80 req/s" in some.reason
    judged = capacity_from_sweep([pt(1), pt(2)])
    assert judged.reason.startswith("every step up to 2 req/s met the SLOs;")
