from __future__ import annotations

import numpy as np
import pytest

from scenarios.errors import ScenarioError
from scenarios.lengths import Empirical, Fixed, Lognormal, Uniform, apply_scale_cap, clipped_mean


def test_fixed_and_uniform() -> None:
    rng = np.random.default_rng(0)
    assert set(Fixed(7).sample(rng, 50).tolist()) == {7}
    u = Uniform(3, 5).sample(rng, 2000)
    assert set(u.tolist()) == {3, 4, 5}


@pytest.mark.parametrize(("mean", "median", "lo", "hi"), [(2048, 1469, 3, 7437), (28, 13, 6, 1899),
                                                          (211, 129, 7, 1000), (500, 500, 1, None)])
def test_lognormal_reproduces_mean_and_median_after_clipping(mean: float, median: float, lo: int,
                                                             hi: int | None) -> None:
    d = Lognormal(mean, median, lo, hi)
    assert clipped_mean(median, d.sigma, lo, hi) == pytest.approx(mean, rel=1e-6)
    x = d.sample(np.random.default_rng(0), 200_000)
    assert x.min() >= lo and (hi is None or x.max() <= hi)
    assert x.mean() == pytest.approx(mean, rel=0.03)
    assert np.median(x) == pytest.approx(median, rel=0.03, abs=1)


def test_lognormal_impossible_mean_is_a_clear_error() -> None:
    with pytest.raises(ScenarioError, match="cannot have mean"):
        _ = Lognormal(5000, 100, 1, 200).sigma
    with pytest.raises(ScenarioError, match="mean >= median"):
        _ = Lognormal(10, 100).sigma


def test_empirical_resamples_given_values() -> None:
    x = Empirical((1, 10, 100)).sample(np.random.default_rng(0), 3000)
    assert set(x.tolist()) == {1, 10, 100}


def test_scale_and_cap() -> None:
    x = np.array([1, 3, 100, 5000])
    assert apply_scale_cap(x, 0.1).tolist() == [1, 1, 10, 500]  # never below one token
    assert apply_scale_cap(x, 2.0, cap=150).tolist() == [2, 6, 150, 150]
    assert apply_scale_cap(x, 1.0, cap=None).tolist() == x.tolist()
