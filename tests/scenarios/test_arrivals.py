from __future__ import annotations

import numpy as np
import pytest

from scenarios.arrivals import ClosedLoop, Constant, Gamma, Offline, OnOff, Poisson, TraceReplay
from scenarios.trace_files import Trace


def _times(proc, n: int) -> np.ndarray:
    return np.array([proc.next_time_s() for _ in range(n)])


def _rate_cv(t: np.ndarray) -> tuple[float, float]:
    g = np.diff(np.concatenate([[0.0], t]))
    return 1.0 / g.mean(), g.std() / g.mean()


def test_constant_is_evenly_spaced_from_zero() -> None:
    t = _times(Constant(4.0), 5)
    assert t.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]


@pytest.mark.parametrize("seed", [0, 1])
def test_poisson_rate_and_cv(seed: int) -> None:
    rate, cv = _rate_cv(_times(Poisson(5.0, np.random.default_rng(seed)), 20_000))
    assert rate == pytest.approx(5.0, rel=0.03)
    assert cv == pytest.approx(1.0, rel=0.03)


@pytest.mark.parametrize("cv_target", [0.5, 2.0, 4.0])
def test_gamma_rate_and_cv(cv_target: float) -> None:
    rate, cv = _rate_cv(_times(Gamma(3.0, cv_target, np.random.default_rng(1)), 40_000))
    assert rate == pytest.approx(3.0, rel=0.06)
    assert cv == pytest.approx(cv_target, rel=0.08)


def test_gamma_cv_zero_is_constant() -> None:
    t = _times(Gamma(2.0, 0.0, np.random.default_rng(0)), 4)
    assert np.allclose(np.diff(t), 0.5)


def test_onoff_has_idle_gaps_and_its_mean_rate() -> None:
    proc = OnOff(on_rate_rps=10.0, on_cv=1.0, on_s=5.0, off_s=15.0, phase_cv=0.2, rng=np.random.default_rng(0))
    assert proc.mean_rate_rps == pytest.approx(2.5)
    t = _times(proc, 20_000)
    assert len(t) / t[-1] == pytest.approx(2.5, rel=0.05)
    gaps = np.diff(t)
    assert (gaps > 5.0).sum() > 100  # the idle periods are there
    assert gaps.std() / gaps.mean() > 2.0  # far burstier than Poisson


def test_trace_replay_speed_and_offset() -> None:
    tr = Trace("x.csv", "azure", (0.0, 1.0, 2.0, 4.0), (5, 6, 7, 8), (1, 2, 3, 4), ((), (), (), ()))
    proc = TraceReplay(tr, speed=2.0, start_s=1.0)
    assert [proc.next_time_s() for _ in range(3)] == [0.0, 0.5, 1.5]
    assert proc.row == 3
    assert proc.next_time_s() is None
    assert proc.mean_rate_rps == pytest.approx(2 * 3 / 4.0)


def test_offline_is_all_at_zero() -> None:
    assert {Offline().next_time_s() for _ in range(10)} == {0.0}


def test_closed_loop_think_times() -> None:
    users = ClosedLoop(concurrency=4, think_s=2.0, think_cv=1.0, rng=np.random.default_rng(0))
    first = [users.next_think_s() for _ in range(4)]
    assert all(0.0 <= x <= 2.0 for x in first)  # users start staggered within one think time
    rest = np.array([users.next_think_s() for _ in range(20_000)])
    assert rest.mean() == pytest.approx(2.0, rel=0.03)
    assert ClosedLoop(2, 0.0, 1.0, np.random.default_rng(0)).next_think_s() == 0.0


def test_profile_follows_its_rate_curve_and_repeats() -> None:
    from scenarios.arrivals import Profile

    rates = (1.0, 0.0, 4.0, 2.0)  # a quiet step gets no request
    proc = Profile(100.0, rates, 1.0, np.random.default_rng(0))
    assert proc.mean_rate_rps == pytest.approx(7.0 / 4)
    t = _times(proc, 14_000)  # about 20 cycles of the 400 s curve
    counts = np.bincount((t % 400 // 100).astype(int), minlength=4) / (t[-1] / 400) / 100
    assert counts[1] == 0
    for got, want in zip(counts[[0, 2, 3]], (1.0, 4.0, 2.0)):
        assert got == pytest.approx(want, rel=0.06)


@pytest.mark.parametrize("cv_target", [0.5, 2.0])
def test_profile_keeps_its_gap_cv_with_the_curve_divided_out(cv_target: float) -> None:
    from scenarios.arrivals import Profile

    t = _times(Profile(50.0, (2.0, 6.0), cv_target, np.random.default_rng(2)), 40_000)
    in_fast_steps = np.diff(t)[(t[:-1] % 100 >= 50) & (t[1:] % 100 >= 50) & (t[1:] - t[:-1] < 50)]
    cv = in_fast_steps.std() / in_fast_steps.mean()
    assert cv == pytest.approx(cv_target, rel=0.10)
    assert 1 / in_fast_steps.mean() == pytest.approx(6.0, rel=0.10)


def test_onoff_idle_cv_apart_from_burst_cv() -> None:
    proc = OnOff(on_rate_rps=50.0, on_cv=1.0, on_s=5.0, off_s=20.0, phase_cv=0.1, off_cv=0.6,
                 rng=np.random.default_rng(3))
    t = _times(proc, 60_000)
    gaps = np.diff(t)
    cut = np.flatnonzero(gaps > 1.0)
    idle = gaps[cut]
    bursts = t[cut[1:]] - t[cut[:-1] + 1]
    assert idle.mean() == pytest.approx(20.0, rel=0.10)
    assert idle.std() / idle.mean() == pytest.approx(0.6, rel=0.15)
    assert bursts.mean() == pytest.approx(5.0, rel=0.05)
    assert bursts.std() / bursts.mean() == pytest.approx(0.1, abs=0.03)


def test_batched_groups_have_their_mean_size_and_come_every_period() -> None:
    from scenarios.arrivals import Batched

    proc = Batched(10.3, 3.0, 0.3, 0.0, np.random.default_rng(0))
    t = _times(proc, 30_000)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(t) > 0) + 1])
    sizes = np.diff(np.concatenate([starts, [t.size]]))[:-1]  # the last group may be cut short
    assert sizes.mean() == pytest.approx(10.3, rel=0.02)
    assert sizes.std() / sizes.mean() == pytest.approx(0.3, rel=0.1)
    assert np.allclose(np.diff(t[starts]), 3.0)  # a regular period
    assert 0 <= t[0] < 3.0  # a random phase of the first period
    assert proc.mean_rate_rps == pytest.approx(10.3 / 3.0)


def test_batched_of_one_is_a_regular_or_gamma_process() -> None:
    from scenarios.arrivals import Batched

    t = _times(Batched(1.0, 0.5, 0.0, 1.0, np.random.default_rng(1)), 20_000)
    rate, cv = _rate_cv(t)
    assert rate == pytest.approx(2.0, rel=0.03) and cv == pytest.approx(1.0, rel=0.05)
