from __future__ import annotations

import random

import numpy as np

from scenarios.seeded_ids import integers, pcg64_state


def _numpy(entropy: tuple[int, ...], lo: int, hi: int, n: int) -> list[int]:
    return np.random.default_rng(list(entropy)).integers(lo, hi, size=n).tolist()


def test_same_numbers_as_numpy_over_seeds_sizes_and_ranges() -> None:
    rnd = random.Random(11)
    for _ in range(1500):
        entropy = (rnd.choice([0, 1, 7, 2**31, 2**40 + 5, rnd.randrange(2**64)]), rnd.choice([1, 2]),
                   rnd.randrange(0, 2 ** rnd.choice([3, 16, 32, 33, 70])), 5)[: rnd.choice([1, 2, 3, 3, 4])]
        lo = rnd.choice([0, 3, 100])
        hi = lo + rnd.choice([1, 2, 3, 31997, 2**31 + 11, 2**32 - 1, 2**32, 2**33])
        n = rnd.choice([0, 1, 7, 8, 47, 48, 200])
        bit_gen = np.random.PCG64(np.random.SeedSequence(list(entropy))).state["state"]
        assert pcg64_state(entropy) == (bit_gen["state"], bit_gen["inc"]), entropy
        assert integers(entropy, lo, hi, n) == _numpy(entropy, lo, hi, n), (entropy, lo, hi, n)


def test_consecutive_indices_in_any_order_match() -> None:
    """States are mixed 64 indices at a time and kept: asking out of order, or across blocks, changes nothing."""
    order = list(range(0, 300)) + list(range(1000, 900, -1)) + [5, 70, 5]
    for i in order:
        assert integers((3, 2, i), 3, 32000, 8) == _numpy((3, 2, i), 3, 32000, 8), i
