"""Scheduler: continuous batching with chunked prefill under a per-step token budget.

Every step feeds each scheduled sequence some of its not-yet-computed tokens:
one for a sequence that is decoding, a chunk of its prompt for one that is
prefilling. Decodes are scheduled first, then unfinished prefills, then new
sequences from the waiting queue, until `max_num_batched_tokens` tokens or
`max_num_seqs` sequences are reached; so a prompt rides along with the
running decodes instead of stalling them, and one longer than the budget is
cut into chunks. At most one prompt is partly prefilled at a time (vLLM's
`max_num_partial_prefills=1`): a step carries the decodes, whole prompts
that fit, and one chunk of one longer prompt, so the budget bounds how long
the running decodes wait (docs/engines.md, "Prefill chunks"). A sequence gets the KV blocks for all its tokens when it is
admitted (and, in a cache that holds every sequence at full length, room for
its whole output in one run when one is free). When
a decode needs a block and none is free, the most recently admitted sequences
are preempted: their blocks are freed and they go back to the front of the
queue, to be recomputed from their tokens later.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from own_engine.core.block_manager import BlockManager
from own_engine.core.sequence import Sequence, SequenceStatus

PLACEHOLDER = -1  # a sampled token not yet known on the host (overlap scheduling: `advance`, then `resolve`)


@dataclass(frozen=True)
class ScheduledBatch:
    """One step's work: `seqs[i]` feeds its next `num_new_tokens[i]` tokens; one-token rows come first."""

    seqs: list[Sequence]
    num_new_tokens: list[int]
    num_decodes: int  # seqs[:num_decodes] feed their one last uncomputed token each (a decode, or a prompt's last)

    @property
    def num_tokens(self) -> int:
        return sum(self.num_new_tokens)


class Scheduler:
    def __init__(self, block_manager: BlockManager, *, max_num_seqs: int, max_num_batched_tokens: int,
                 max_model_len: int, eos_token_ids: tuple[int, ...]) -> None:
        assert max_num_batched_tokens >= max_num_seqs, "a step must have room for one token of every sequence"
        self.block_manager = block_manager
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_model_len = max_model_len
        self.eos_token_ids = frozenset(eos_token_ids)
        self.waiting: deque[Sequence] = deque()
        self.running: deque[Sequence] = deque()  # in admission order
        self.num_preemptions = 0
        # reserving room for each output never keeps a sequence out when the cache holds max_num_seqs sequences of
        # max_model_len tokens (the engine's default size); a smaller cache pages on demand and preempts instead
        per_seq = block_manager.blocks_needed(max_model_len)
        self.reserve_output = block_manager.num_blocks >= max_num_seqs * per_seq

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> ScheduledBatch:
        """The sequences of the next step and how many tokens each feeds."""
        budget = self.max_num_batched_tokens
        decodes: list[Sequence] = []
        chunks: list[tuple[Sequence, int]] = []
        preempted = False
        # 1. running decodes, oldest first; a decode that needs a block nobody has preempts the newest sequence
        for seq in list(self.running):
            if budget == 0:
                break
            if seq.status is not SequenceStatus.RUNNING or seq.num_uncomputed_tokens != 1:
                continue
            while not self.block_manager.can_append(seq):
                victim = self.running[-1]
                self.preempt(victim)
                preempted = True
                if victim is seq:
                    break
            if seq.status is SequenceStatus.RUNNING:
                self.block_manager.may_append(seq)
                decodes.append(seq)
                budget -= 1
        # one prompt at most is left partly prefilled by a step (a cut chunk); whole prompts ride along as they fit
        partial = False
        # 2. prompts still being prefilled (their blocks are already held)
        for seq in self.running:
            if budget == 0:
                break
            if seq.num_uncomputed_tokens > 1:
                n = min(seq.num_uncomputed_tokens, budget)
                if n < seq.num_uncomputed_tokens:
                    if partial:
                        continue
                    partial = True
                chunks.append((seq, n))
                budget -= n
        # 3. new sequences, first come first served, while there is a free slot and blocks for the prompt; a prompt
        # that fits one step whole waits for a step with room rather than being cut (same first token, less work),
        # but only behind other prompts' chunks: never behind running decodes, which may hold the budget for long
        while self.waiting and budget > 0 and not preempted and len(self.running) < self.max_num_seqs:
            seq = self.waiting[0]
            fits_later = seq.num_uncomputed_tokens <= self.max_num_batched_tokens and not decodes
            cut = seq.num_uncomputed_tokens > budget
            if (fits_later and cut) or (cut and partial) or not self.block_manager.can_allocate(seq):
                break
            partial = partial or cut
            self.waiting.popleft()
            # room for its whole output in one run of blocks, if one is free: decode then reads the cache in place
            left = seq.params.max_tokens - seq.num_completion_tokens
            reserve = min(len(seq) + left, self.max_model_len) if self.reserve_output else 0
            self.block_manager.allocate(seq, reserve_tokens=reserve)
            seq.status = SequenceStatus.RUNNING
            self.running.append(seq)
            n = min(seq.num_uncomputed_tokens, budget)
            chunks.append((seq, n))
            budget -= n
        # a prompt's last token alone attends like a decode: it joins the batched decode rows
        ones = [s for s, n in chunks if n == 1 == s.num_uncomputed_tokens]
        chunks = [(s, n) for s, n in chunks if not n == 1 == s.num_uncomputed_tokens]
        seqs = decodes + ones + [s for s, _ in chunks]
        # a lone sequence always fits (the engine refuses any that could not), so only a step that preempted
        # everything comes back empty; the next one admits again
        assert seqs or preempted or not self.has_unfinished()
        return ScheduledBatch(seqs, [1] * (len(decodes) + len(ones)) + [n for _, n in chunks],
                              len(decodes) + len(ones))

    def preempt(self, seq: Sequence) -> None:
        seq.status = SequenceStatus.WAITING
        seq.num_computed_tokens = 0
        self.block_manager.deallocate(seq)
        self.running.remove(seq)
        self.waiting.appendleft(seq)
        self.num_preemptions += 1

    def postprocess(self, batch: ScheduledBatch, token_ids: list[int]) -> list[Sequence]:
        """Account the fed tokens, append one new token to each sequence that completed; those sequences (the
        plain step: `advance`, then `resolve` with the ids at once)."""
        rows = self.advance(batch)
        self.resolve(rows, token_ids)
        return [seq for seq, _ in rows]

    def advance(self, batch: ScheduledBatch) -> list[tuple[Sequence, int]]:
        """Overlap scheduling (`EngineConfig(overlap=True)`): account a launched step's tokens before its sampled ids
        are known, so the next step can be scheduled while this one runs. Each sequence that samples gets
        PLACEHOLDER at the index its token will take, and stops now if a count (max_tokens, the context) ends it.
        Returns (sequence, index) per sampled token, in batch order, for `resolve`."""
        rows: list[tuple[Sequence, int]] = []
        for seq, n in zip(batch.seqs, batch.num_new_tokens, strict=True):
            seq.num_computed_tokens += n
            if seq.num_computed_tokens == len(seq):
                rows.append((seq, len(seq)))
                seq.append_token(PLACEHOLDER)
                if ends_by_count(seq, self.max_model_len):
                    self.finish(seq)
        return rows

    def resolve(self, rows: list[tuple[Sequence, int]], token_ids: list[int]) -> list[tuple[Sequence, int, bool]]:
        """The sampled ids of an advanced step arrived: fill its placeholders and stop a sequence at an EOS. A
        token at or past an earlier stop (an EOS resolved after this step was launched) is dropped, with the
        placeholders past the EOS. Returns (sequence, token, finished) per kept token."""
        out: list[tuple[Sequence, int, bool]] = []
        for (seq, i), tok in zip(rows, token_ids, strict=True):
            if i >= len(seq.token_ids):
                continue
            seq.token_ids[i] = tok
            if ends_by_eos(seq, i, self.eos_token_ids):
                del seq.token_ids[i + 1:]
                if seq.status is SequenceStatus.RUNNING:
                    self.finish(seq)
                elif seq.status is SequenceStatus.WAITING:  # preempted after this step was launched
                    self.waiting.remove(seq)
                    seq.status = SequenceStatus.FINISHED
            out.append((seq, tok, seq.is_finished and i == len(seq.token_ids) - 1))
        return out

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
    return ends_by_eos(seq, len(seq) - 1, eos_token_ids) or ends_by_count(seq, max_model_len)


def ends_by_count(seq: Sequence, max_model_len: int) -> bool:
    """max_tokens or the context reached with the token just appended, whatever its value."""
    return seq.num_completion_tokens >= seq.params.max_tokens or len(seq) >= max_model_len


def ends_by_eos(seq: Sequence, i: int, eos_token_ids: frozenset[int]) -> bool:
    """Whether the token at index `i` is an EOS that ends the sequence (not ignored, min_tokens reached with it)."""
    p = seq.params
    return not p.ignore_eos and seq.token_ids[i] in eos_token_ids and i + 1 - seq.num_prompt_tokens >= p.min_tokens
