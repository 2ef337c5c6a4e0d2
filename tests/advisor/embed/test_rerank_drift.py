"""The rerank drift figures on hand-made scores, against a computation written out by hand, and the seeded cases."""

from __future__ import annotations

import pytest

from advisor.embed.rerank_drift import K, compare, rerank_cases, top_by_score


def test_top_by_score_is_best_first_and_ties_keep_the_lower_index() -> None:
    assert top_by_score([0.1, 0.9, 0.5, 0.9], 3).tolist() == [1, 3, 2]


def test_compare_on_scores_worked_by_hand() -> None:
    ref = [[0.9, 0.8, 0.7, 0.1], [0.4, 0.3, 0.2, 0.1]]
    got = [[0.9, 0.8, 0.7, 0.1], [0.1, 0.2, 0.3, 0.45]]  # case 2: the order reversed, one score off by 0.35
    figs = compare(ref, got, k=2)
    # case 1: same top 2 ({0, 1}), tau 1; case 2: top 2 {0, 1} against {3, 2}: no overlap, tau -1
    assert figs == pytest.approx({"topk_overlap_mean": 0.5, "topk_overlap_min": 0.0, "kendall_tau_mean": 0.0,
                                  "kendall_tau_min": -1.0, "score_max_abs_diff": 0.35})
    swapped = [[0.9, 0.8, 0.1, 0.7], ref[1]]  # one discordant pair of six: tau (5 - 1) / 6; top 2 unchanged
    assert compare(ref, swapped, k=2)["kendall_tau_min"] == pytest.approx(4 / 6)
    assert compare(ref, swapped, k=2)["topk_overlap_min"] == 1.0
    with pytest.raises(ValueError, match="one for one"):
        compare(ref, [got[0]])


def test_cases_are_seeded_and_hold_the_querys_own_chunk() -> None:
    chunks = [f"w{i} " + " ".join(f"c{i}x{j}" for j in range(10)) for i in range(40)]
    cases = rerank_cases(chunks, 8, 12, seed=3)
    assert cases == rerank_cases(chunks, 8, 12, seed=3) and cases != rerank_cases(chunks, 8, 12, seed=4)
    for query, idx in cases:
        assert len(idx) == len(set(idx)) == 12
        assert 4 <= len(query.split()) <= 8
        src = int(query.split()[0][1:].split("x")[0].lstrip("w") or 0) if query.startswith("w") else \
            int(query.split()[0][1:].split("x")[0])
        assert src in idx  # the chunk the query was cut from is one of its candidates
    with pytest.raises(ValueError, match=f"between {K} and the 40"):
        rerank_cases(chunks, 2, K - 1, seed=0)
