"""Raw per-request records: what the load generator saw, nothing derived.

All times are nanoseconds relative to the run's t0 (`time.perf_counter_ns()`
when the schedule started), so records from one run share one clock.
Metrics (TTFT, TPOT, ITL, ...) are computed from these in `advisor.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fileform import FileForm

# a field's integers fit 32 bits: its requests.parquet column is int32 (every other int is int64; advisor.saved.store)
INT32 = {"parquet": "int32"}


@dataclass(slots=True)
class RequestRecord(FileForm):
    idx: int  # position in the schedule
    request_id: str
    t_sched_ns: int  # when the schedule said to send it
    t_send_ns: int | None = None  # when it was actually sent (None: never sent)
    # the sending thread's run-queue time (runnable, another task on its CPU) from the send loop's last wait
    # before this send, or the previous send, to this send (advisor.loadgen.cpu_wait; None: not known here)
    client_wait_ns: int | None = None
    chunk_t_ns: list[int] = field(default_factory=list)  # arrival time of each chunk
    chunk_tokens: list[int] = field(default_factory=list, metadata=INT32)  # output tokens carried by each chunk
    chunk_t_engine_ns: list[int] = field(default_factory=list)  # engine's own stamp per chunk, where it gives one
    t_end_ns: int | None = None  # when the request ended: last chunk, error, timeout or cancel (None: never sent)
    n_in: int = 0  # prompt tokens as the engine/server counted them (else as sent)
    n_in_client: int = 0  # prompt tokens as the client sent them
    n_out: int = 0  # output tokens as the engine/server counted them
    n_out_client: int | None = None  # the client's own count, when it has one
    max_tokens: int = 0  # output tokens asked for
    warmup: bool = False  # sent during warm-up: excluded from measurement
    token_source: str | None = None  # where the per-chunk token counts came from (adapters.base.TokenSource)
    session_id: int | None = None  # multi-turn sessions: which conversation, and which turn of it (0 first)
    turn: int | None = field(default=None, metadata=INT32)
    n_in_shared: int = 0  # prompt tokens repeated verbatim from the previous turn's prompt + answer
    turns_dropped: int = field(default=0, metadata=INT32)  # earlier turns dropped from this prompt to fit the context (advisor.loadgen.sessions)
    error_kind: str | None = None
    error: str | None = None
    worker: int = field(default=0, metadata=INT32)  # the load-generator worker that sent it (advisor.loadgen.workers; 0 with one driver)

    @property
    def ok(self) -> bool:
        return self.error_kind is None and self.t_send_ns is not None

    @property
    def t_first_ns(self) -> int | None:
        for t, n in zip(self.chunk_t_ns, self.chunk_tokens):
            if n > 0:
                return t
        return None

    @property
    def t_last_ns(self) -> int | None:
        for t, n in zip(reversed(self.chunk_t_ns), reversed(self.chunk_tokens)):
            if n > 0:
                return t
        return None
