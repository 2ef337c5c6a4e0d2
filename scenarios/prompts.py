"""Prompt token ids for a scheduled request, deterministic and vocabulary-agnostic.

A request's prompt is its shared prefix blocks (one 512-token block per
Mooncake hash id; the block's content depends only on (seed, hash id), so
requests that share hash ids really share those tokens and a prefix cache
can hit) followed by a tail unique to the request (from (seed, idx)).
Ids are drawn uniformly from `token_range`, so reserved special ids can be
kept out. Knows nothing about tokenizers or text.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from scenarios import seeded_ids
from scenarios.types import PREFIX_BLOCK_TOKENS, ScheduledRequest

_BLOCK, _TAIL = 1, 2  # random streams, kept apart so a block never equals a tail by construction
MAX_PROMPT_TOKENS = 16_777_216  # one prompt is never built past this (~130 MB of ids in memory, more as a body)


class PromptTooLong(ValueError):
    """A prompt longer than any this process will hold in memory."""


@lru_cache(maxsize=4096)
def _block(seed: int, hash_id: int, lo: int, hi: int) -> tuple[int, ...]:
    rng = np.random.default_rng([seed, _BLOCK, hash_id])
    return tuple(rng.integers(lo, hi, size=PREFIX_BLOCK_TOKENS).tolist())


def make_prompt_ids(req: ScheduledRequest, seed: int, vocab_size: int, *,
                    token_range: tuple[int, int] | None = None) -> tuple[int, ...]:
    """`req.n_in` token ids: shared prefix blocks, then a unique tail; ids in token_range [lo, hi)."""
    lo, hi = token_range if token_range is not None else (0, vocab_size)
    if not 0 <= lo < hi <= vocab_size:
        raise ValueError(f"token_range must satisfy 0 <= lo < hi <= vocab_size={vocab_size}, got ({lo}, {hi})")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    if req.n_in > MAX_PROMPT_TOKENS:
        raise PromptTooLong(f"request {req.idx} has a {req.n_in:,}-token prompt; advisor builds at most "
                            f"{MAX_PROMPT_TOKENS:,}: lower --length-scale or set --max-input-tokens")
    ids: list[int] = []
    for h in req.prefix_blocks:
        if len(ids) + PREFIX_BLOCK_TOKENS > req.n_in:
            break  # the schedule keeps only whole blocks that fit; be safe with hand-made requests
        ids.extend(_block(seed, h, lo, hi))
    n_tail = req.n_in - len(ids)
    if n_tail > 0:
        # = np.random.default_rng([seed, _TAIL, req.idx]).integers(lo, hi, size=n_tail), at a fraction of its cost
        ids.extend(seeded_ids.integers((seed, _TAIL, req.idx), lo, hi, n_tail))
    assert len(ids) == req.n_in, (len(ids), req.n_in)
    return tuple(ids)
