"""BlockManager: the paged KV cache's bookkeeping: fixed-size blocks, a free list, block tables.

A sequence of n tokens holds ceil(n / block_size) blocks. No prefix sharing
(nano-vllm's hash-based prefix cache is left out): every block has one owner.
"""

from __future__ import annotations

from collections import deque

from own_engine.sequence import Sequence


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int) -> None:
        assert num_blocks > 0 and block_size > 0
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.free_blocks: deque[int] = deque(range(num_blocks))
        self.used_blocks: set[int] = set()

    def blocks_needed(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    @property
    def num_free(self) -> int:
        return len(self.free_blocks)

    @property
    def num_used(self) -> int:
        return len(self.used_blocks)

    def can_allocate(self, seq: Sequence) -> bool:
        return self.blocks_needed(len(seq)) <= self.num_free

    def allocate(self, seq: Sequence) -> None:
        """Blocks for every token the sequence has now (its prefill)."""
        assert not seq.block_table, f"sequence {seq.seq_id} already holds blocks"
        for _ in range(self.blocks_needed(len(seq))):
            self._take(seq)

    def deallocate(self, seq: Sequence) -> None:
        for block in reversed(seq.block_table):
            assert block in self.used_blocks, f"block {block} freed twice"
            self.used_blocks.remove(block)
            self.free_blocks.appendleft(block)  # recently used blocks first: warmer in cache
        seq.block_table.clear()

    def can_append(self, seq: Sequence) -> bool:
        """Whether the sequence's newest token (written by the next decode step) has room."""
        return self.blocks_needed(len(seq)) <= len(seq.block_table) or self.num_free >= 1

    def may_append(self, seq: Sequence) -> None:
        if self.blocks_needed(len(seq)) > len(seq.block_table):
            self._take(seq)
        assert len(seq.block_table) == self.blocks_needed(len(seq))

    def _take(self, seq: Sequence) -> None:
        block = self.free_blocks.popleft()
        assert block not in self.used_blocks
        self.used_blocks.add(block)
        seq.block_table.append(block)
