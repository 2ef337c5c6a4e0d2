"""Throughput over the measurement window: which work counts, and per second of what.

Tokens count where they physically arrived: an output token counts when its chunk
arrived inside the window, from any request (warm-up and failed ones included:
they were real work in the window). A prompt counts when its prefill finished,
i.e. at the request's first output token. Both window ends are inclusive.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from advisor.loadgen.records import RequestRecord
from advisor.metrics.per_request import completion_ns

_NS_PER_S = 1_000_000_000


def resolve_window(measured: Sequence[RequestRecord], window_ns: tuple[int, int] | None) -> tuple[int, int] | None:
    """The given window, or [first measured t_send, last measured t_last]; None if nothing ran."""
    if window_ns is not None:
        start, end = int(window_ns[0]), int(window_ns[1])
        if end <= start:
            raise ValueError(f"measurement window must end after it starts, got window_ns={window_ns}")
        return start, end
    sends = [r.t_send_ns for r in measured if r.t_send_ns is not None]
    lasts = [t for r in measured if (t := r.t_last_ns) is not None]
    if not sends or not lasts:
        return None
    return min(sends), max(lasts)


def _inside(t: int, window: tuple[int, int]) -> bool:
    return window[0] <= t <= window[1]


def output_tokens_in(records: Sequence[RequestRecord], window: tuple[int, int]) -> int:
    """Output tokens whose chunk arrived inside the window, from any record."""
    return sum(n for r in records for t, n in zip(r.chunk_t_ns, r.chunk_tokens, strict=True) if _inside(t, window))


def input_tokens_in(records: Sequence[RequestRecord], window: tuple[int, int]) -> int:
    """Prompt tokens of every record whose first output token arrived inside the window."""
    return sum(r.n_in for r in records if (t := r.t_first_ns) is not None and _inside(t, window))


def completed_in(records: Sequence[RequestRecord], window: tuple[int, int]) -> int:
    """Successful records that finished inside the window."""
    return sum(1 for r in records if r.ok and (t := completion_ns(r)) is not None and _inside(t, window))


def peak_output_tokens_per_s(records: Sequence[RequestRecord], window: tuple[int, int]) -> float:
    """Most output tokens in any 1 s bucket of the window, counted from the window start.

    A partial last bucket is still divided by 1 s (it can only lower its rate); a
    window shorter than 1 s is one bucket divided by its own length.
    """
    start, end = window
    length_ns = end - start
    assert length_ns > 0
    if length_ns < _NS_PER_S:
        return output_tokens_in(records, window) * _NS_PER_S / length_ns
    buckets = [0] * math.ceil(length_ns / _NS_PER_S)
    for r in records:
        for t, n in zip(r.chunk_t_ns, r.chunk_tokens, strict=True):
            if _inside(t, window):
                buckets[min((t - start) // _NS_PER_S, len(buckets) - 1)] += n
    return float(max(buckets))
