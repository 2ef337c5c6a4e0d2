"""Scheduler: continuous batching over waiting and running queues.

Each step is either a prefill of waiting sequences (as many as fit the token
budget, the sequence cap and the free blocks) or one decode step of every
running sequence. When a decode step runs out of blocks, the most recently
admitted sequences are preempted: their blocks are freed and they go back to
the front of the queue to be recomputed from their tokens later.
"""

from __future__ import annotations

from collections import deque

from own_engine.block_manager import BlockManager
from own_engine.sequence import Sequence, SequenceStatus


class Scheduler:
    def __init__(self, block_manager: BlockManager, *, max_num_seqs: int, max_num_batched_tokens: int,
                 max_model_len: int, eos_token_ids: tuple[int, ...]) -> None:
        assert max_num_batched_tokens >= max_model_len, "every admitted sequence must fit one prefill"
        self.block_manager = block_manager
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_model_len = max_model_len
        self.eos_token_ids = frozenset(eos_token_ids)
        self.waiting: deque[Sequence] = deque()
        self.running: deque[Sequence] = deque()
        self.num_preemptions = 0

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> tuple[list[Sequence], bool]:
        """The sequences of the next step and whether it is a prefill."""
        scheduled: list[Sequence] = []
        num_tokens = 0
        while self.waiting and len(self.running) + len(scheduled) < self.max_num_seqs:
            seq = self.waiting[0]
            if num_tokens + len(seq) > self.max_num_batched_tokens or not self.block_manager.can_allocate(seq):
                break
            self.block_manager.allocate(seq)
            num_tokens += len(seq)
            seq.status = SequenceStatus.RUNNING
            self.waiting.popleft()
            scheduled.append(seq)
        if scheduled:
            self.running.extend(scheduled)
            return scheduled, True
        while self.running:
            seq = self.running.popleft()
            while not self.block_manager.can_append(seq):
                if self.running:
                    self.preempt(self.running.pop())
                else:
                    self.preempt(seq)
                    break
            else:
                self.block_manager.may_append(seq)
                scheduled.append(seq)
        # a lone sequence always fits (the engine refuses any that could not), so a step never comes back empty
        assert scheduled or not self.has_unfinished() or self.waiting
        self.running.extendleft(reversed(scheduled))
        return scheduled, False

    def preempt(self, seq: Sequence) -> None:
        seq.status = SequenceStatus.WAITING
        self.block_manager.deallocate(seq)
        self.waiting.appendleft(seq)
        self.num_preemptions += 1

    def postprocess(self, seqs: list[Sequence], token_ids: list[int]) -> None:
        """Append each new token and retire the sequences that are done."""
        for seq, tok in zip(seqs, token_ids, strict=True):
            seq.append_token(tok)
            if stop_reached(seq, self.eos_token_ids, self.max_model_len):
                self.finish(seq)

    def finish(self, seq: Sequence) -> None:
        seq.status = SequenceStatus.FINISHED
        self.block_manager.deallocate(seq)
        self.running.remove(seq)

    def abort(self, seq: Sequence) -> None:
        """Drop a sequence wherever it is (the client went away)."""
        if seq in self.waiting:
            self.waiting.remove(seq)
            seq.status = SequenceStatus.FINISHED
        elif seq in self.running:
            self.finish(seq)


def stop_reached(seq: Sequence, eos_token_ids: frozenset[int], max_model_len: int) -> bool:
    """Whether the token just appended ends the sequence (EOS after min_tokens, max_tokens, or the context)."""
    p = seq.params
    n = seq.num_completion_tokens
    hit_eos = not p.ignore_eos and seq.last_token in eos_token_ids and n >= p.min_tokens
    return hit_eos or n >= p.max_tokens or len(seq) >= max_model_len
