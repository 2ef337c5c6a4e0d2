"""BlockManager invariants: every block has one owner, counts add up, freed blocks come back."""

from __future__ import annotations

import pytest

from own_engine.core.block_manager import BlockManager
from own_engine.core.sampling_params import SamplingParams
from own_engine.core.sequence import Sequence


def _seq(n: int) -> Sequence:
    return Sequence(list(range(1, n + 1)), SamplingParams())


def test_allocate_append_and_free_keep_blocks_consistent() -> None:
    bm = BlockManager(num_blocks=8, block_size=4)
    a, b = _seq(5), _seq(4)
    bm.allocate(a)
    bm.allocate(b)
    assert len(a.block_table) == 2 and len(b.block_table) == 1
    assert not set(a.block_table) & set(b.block_table)
    assert bm.num_used + bm.num_free == 8 and bm.num_used == 3
    b.append_token(9)  # 5 tokens: the next decode writes position 4, which needs a second block
    assert bm.can_append(b)
    bm.may_append(b)
    assert len(b.block_table) == 2 and bm.num_used == 4
    a.append_token(9)  # 6 tokens still fit 2 blocks of 4: no new block
    bm.may_append(a)
    assert len(a.block_table) == 2 and bm.num_used == 4
    bm.deallocate(a)
    assert a.block_table == [] and bm.num_used == 2 and bm.num_free == 6


def test_can_allocate_respects_free_blocks_and_double_free_is_caught() -> None:
    bm = BlockManager(num_blocks=2, block_size=4)
    big = _seq(9)  # needs 3 blocks
    assert not bm.can_allocate(big)
    s = _seq(8)
    bm.allocate(s)
    assert bm.num_free == 0
    s.append_token(1)
    assert not bm.can_append(s)
    table = list(s.block_table)
    bm.deallocate(s)
    s.block_table.extend(table)
    with pytest.raises(AssertionError):
        bm.deallocate(s)
