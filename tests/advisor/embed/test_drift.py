"""The embedding drift figures on hand-made vectors, against a computation written out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.embed.drift import compare, cosines, kendall_tau, overlap_at_k, queries_from, top_k


def test_cosines_row_by_row_against_the_formula() -> None:
    a = np.array([[1.0, 0.0], [1.0, 1.0], [3.0, 4.0]])
    b = np.array([[1.0, 0.0], [1.0, 0.0], [-3.0, -4.0]])
    assert cosines(a, b) == pytest.approx([1.0, 1 / math.sqrt(2), -1.0])
    with pytest.raises(ValueError, match="cannot be compared row by row"):
        cosines(a, b[:2])


def test_top_k_and_overlap_on_a_ranking_worked_by_hand() -> None:
    docs = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]])
    q = np.array([[1.0, 0.1]])  # dots: 1.0, 0.86, 0.1, -1.0
    assert top_k(q, docs, 2).tolist() == [[0, 1]]
    assert top_k(q, docs, 3).tolist() == [[0, 1, 2]]
    ref = np.array([[0, 1, 2], [3, 2, 1]])
    got = np.array([[1, 0, 3], [3, 2, 1]])
    assert overlap_at_k(ref, got).tolist() == pytest.approx([2 / 3, 1.0])


def test_compare_reports_a_swapped_neighbour_and_the_cosine_drift() -> None:
    docs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    q = np.array([[1.0, 0.5, 0.0]])  # reference top-1: doc 0
    moved = docs.copy()
    moved[1] = [0.0, 3.0, 0.0]  # same direction (cosine 1), larger: now doc 1 outranks doc 0 for the query
    moved[2] = [0.0, 0.6, 0.8]  # cosine 0.8 to its reference
    got = compare(docs, q, moved, q, k=1)
    assert got == pytest.approx({"cosine_min": 0.8, "cosine_mean": (1 + 1 + 0.8) / 3, "recall_overlap_mean": 0.0,
                                 "recall_overlap_min": 0.0})
    assert compare(docs, q, docs, q, k=2) == pytest.approx({"cosine_min": 1.0, "cosine_mean": 1.0,
                                                            "recall_overlap_mean": 1.0, "recall_overlap_min": 1.0})


def test_kendall_tau_b_on_orders_worked_by_hand() -> None:
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # one swapped pair of 6: (5 - 1) / 6
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    # a tie in y: pairs 6, concordant 5, tied in y 1 -> 5 / sqrt(6 * 5)
    assert kendall_tau([1, 2, 3, 4], [1, 2, 2, 4]) == pytest.approx(5 / math.sqrt(30))
    with pytest.raises(ValueError, match="same length"):
        kendall_tau([1, 2], [1])


def test_queries_are_seeded_windows_of_the_corpus() -> None:
    chunks = ["a b c d e f g h i j", "k l m n o p q r s t u v"]
    qs = queries_from(chunks, 20, seed=3)
    assert qs == queries_from(chunks, 20, seed=3) and qs != queries_from(chunks, 20, seed=4)
    for q in qs:
        words = q.split()
        assert 4 <= len(words) <= 8 and any(q in c for c in chunks)
