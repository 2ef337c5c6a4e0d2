"""Hand-made request records for the metrics tests, with times given in milliseconds."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from advisor.loadgen.records import RequestRecord

MS = 1_000_000  # ns per ms


def rec(t_sched_ms: float, t_send_ms: float | None, chunks: Sequence[tuple[float, int]] = (), *, n_out: int | None = None,
        n_in: int = 10, n_out_client: int | None = None, max_tokens: int = 0, warmup: bool = False,
        error_kind: str | None = None, idx: int = 0) -> RequestRecord:
    """A record whose chunks are (arrival ms, tokens); n_out defaults to the tokens streamed."""
    return RequestRecord(
        idx=idx, request_id=f"r{idx}", t_sched_ns=round(t_sched_ms * MS),
        t_send_ns=None if t_send_ms is None else round(t_send_ms * MS),
        chunk_t_ns=[round(t * MS) for t, _ in chunks], chunk_tokens=[n for _, n in chunks],
        n_in=n_in, n_in_client=n_in, n_out=sum(n for _, n in chunks) if n_out is None else n_out,
        n_out_client=n_out_client, max_tokens=max_tokens, warmup=warmup, error_kind=error_kind,
        error=None if error_kind is None else f"{error_kind} failure",
    )


def open_run(n: int, *, gap_ms: float = 500.0, w0_ms: float = 10_000.0, lag_ms: float = 0.0,
             ttft_ms: float = 50.0, n_tokens: int = 10, step_ms: float = 10.0, service_ms: float | None = None,
             fail: AbstractSet[int] = frozenset()) -> tuple[list[RequestRecord], tuple[int, int]]:
    """n measured open-loop requests, one every gap_ms from w0_ms, and the window covering their schedule.

    With `service_ms`, the engine serves one request at a time for that long each
    (a queue that grows when service_ms > gap_ms); else every request gets the same
    TTFT and a token every step_ms.
    """
    records: list[RequestRecord] = []
    free_at = w0_ms
    for i in range(n):
        t_sched = w0_ms + i * gap_ms
        t_send = t_sched + lag_ms
        if i in fail:
            records.append(rec(t_sched, t_send, [], error_kind="http_5xx", idx=i))
            continue
        if service_ms is None:
            first = t_send + ttft_ms
            chunks = [(first + k * step_ms, 1) for k in range(n_tokens)]
        else:
            start = max(t_send, free_at)
            free_at = start + service_ms
            chunks = [(start + ttft_ms, 1), (free_at, n_tokens - 1)]
        records.append(rec(t_sched, t_send, chunks, max_tokens=n_tokens, idx=i))
    window = (round(w0_ms * MS), round((w0_ms + n * gap_ms) * MS))
    return records, window
