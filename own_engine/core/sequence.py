"""Sequence: one request inside the engine: its token ids, status, KV block table and prefill progress."""

from __future__ import annotations

import itertools
from enum import Enum, auto

from own_engine.core.sampling_params import SamplingParams

StepOutput = tuple[int, list[int], bool]  # what an engine step gives per sequence: (seq_id, new token ids, finished)


class SequenceStatus(Enum):
    WAITING = auto()
    RUNNING = auto()
    FINISHED = auto()


class Sequence:
    _ids = itertools.count()

    def __init__(self, token_ids: list[int], params: SamplingParams) -> None:
        assert token_ids, "a sequence needs at least one prompt token"
        self.seq_id = next(Sequence._ids)
        self.status = SequenceStatus.WAITING
        self.token_ids = list(token_ids)
        self.num_prompt_tokens = len(token_ids)
        self.params = params
        self.block_table: list[int] = []
        self.kv_contiguous = False  # the block table is one run of consecutive blocks (kept by the BlockManager)
        # tokens whose K/V are in the cache; the rest are fed by the next steps (a prefill in chunks, or the
        # one newest token of a decode). A sequence samples its next token once this reaches len(seq).
        self.num_computed_tokens = 0
        self.generator = None  # torch.Generator for seeded sampling, made by the sampler on first use

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def num_uncomputed_tokens(self) -> int:
        return len(self.token_ids) - self.num_computed_tokens

    @property
    def num_completion_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def completion_token_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens:]

    @property
    def last_token(self) -> int:
        return self.token_ids[-1]

    @property
    def is_finished(self) -> bool:
        return self.status == SequenceStatus.FINISHED

    def append_token(self, token_id: int) -> None:
        self.token_ids.append(token_id)
