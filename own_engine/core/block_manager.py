"""BlockManager: the paged KV cache's bookkeeping: fixed-size blocks, which are free, block tables.

A sequence of n tokens holds at least ceil(n / block_size) blocks. Blocks are
handed out lowest-numbered first (so the memory in use stays compact) and,
where possible, as one contiguous run: a sequence admitted with room to grow
gets a run long enough for its whole output when one is free, and a growing
sequence takes the block right after its last one when that is free. A
sequence whose blocks form one run (`kv_contiguous`) can be attended to
through a view of the cache instead of a gathered copy. No prefix sharing
(nano-vllm's hash-based prefix cache is left out): every block has one owner.
`on_free`, when given, is called with the blocks of every sequence freed (the
engine releases their memory pages on CPU: `memory_release.KVPageRelease`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from own_engine.core.sequence import Sequence


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int, on_free: Callable[[list[int]], None] | None = None) -> None:
        assert num_blocks > 0 and block_size > 0
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.on_free = on_free
        self.free = np.ones(num_blocks, dtype=bool)
        self.num_free = num_blocks

    def blocks_needed(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    @property
    def num_used(self) -> int:
        return self.num_blocks - self.num_free

    def can_allocate(self, seq: Sequence) -> bool:
        return self.blocks_needed(len(seq)) <= self.num_free

    def allocate(self, seq: Sequence, reserve_tokens: int = 0) -> None:
        """Blocks for every token the sequence has now; one run for `reserve_tokens` tokens if one is free."""
        assert not seq.block_table, f"sequence {seq.seq_id} already holds blocks"
        need = self.blocks_needed(len(seq))
        want = max(need, self.blocks_needed(reserve_tokens))
        for n in dict.fromkeys((want, need)):  # the whole reservation in one run, else the tokens in one run
            start = self._first_free_run(n)
            if start is not None:
                self._take(seq, list(range(start, start + n)))
                return
        self._take(seq, [int(b) for b in np.flatnonzero(self.free)[:need]])

    def deallocate(self, seq: Sequence) -> None:
        for block in seq.block_table:
            assert not self.free[block], f"block {block} freed twice"
            self.free[block] = True
        self.num_free += len(seq.block_table)
        if self.on_free is not None and seq.block_table:
            self.on_free(list(seq.block_table))
        seq.block_table.clear()
        seq.kv_contiguous = False

    def can_append(self, seq: Sequence) -> bool:
        """Whether the sequence's newest token (written by the next decode step) has room."""
        return self.blocks_needed(len(seq)) <= len(seq.block_table) or self.num_free >= 1

    def may_append(self, seq: Sequence) -> None:
        if self.blocks_needed(len(seq)) > len(seq.block_table):
            after = seq.block_table[-1] + 1
            if after < self.num_blocks and self.free[after]:
                self._take(seq, [after])
            else:
                self._take(seq, [int(np.argmax(self.free))])
        assert len(seq.block_table) >= self.blocks_needed(len(seq))

    def _first_free_run(self, n: int) -> int | None:
        """The lowest block starting n free blocks in a row, or None."""
        if n > self.num_free:
            return None
        total = np.concatenate(([0], np.cumsum(self.free, dtype=np.int64)))
        hits = np.flatnonzero(total[n:] - total[:-n] == n)  # windows of n blocks that are all free
        return int(hits[0]) if hits.size else None

    def _take(self, seq: Sequence, blocks: list[int]) -> None:
        assert blocks and self.free[blocks].all()
        self.free[blocks] = False
        self.num_free -= len(blocks)
        was_empty = not seq.block_table
        contiguous = all(b == blocks[0] + i for i, b in enumerate(blocks))
        if not was_empty:
            contiguous = contiguous and seq.kv_contiguous and blocks[0] == seq.block_table[-1] + 1
        seq.block_table.extend(blocks)
        seq.kv_contiguous = contiguous
