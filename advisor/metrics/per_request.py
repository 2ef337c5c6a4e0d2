"""Per-request metrics from one raw `RequestRecord`, exactly as docs/metrics.md defines them.

Each function returns None where the metric is undefined for that record (never
sent, no output token, no token after the first chunk for TPOT, ...). They do not look at `ok`:
`summarize` decides which records enter which distribution.
"""

from __future__ import annotations

from itertools import pairwise

from advisor.loadgen.records import RequestRecord
from scenarios.types import SLOs

_NS_PER_MS = 1e6


def client_queue_ms(rec: RequestRecord) -> float | None:
    """t_send - t_sched: how late the load generator sent the request."""
    if rec.t_send_ns is None:
        return None
    return (rec.t_send_ns - rec.t_sched_ns) / _NS_PER_MS


def ttft_ms(rec: RequestRecord) -> float | None:
    """t_first - t_send."""
    t_first = rec.t_first_ns
    if rec.t_send_ns is None or t_first is None:
        return None
    return (t_first - rec.t_send_ns) / _NS_PER_MS


def ttft_sched_ms(rec: RequestRecord) -> float | None:
    """t_first - t_sched: includes client queueing (no coordinated omission)."""
    t_first = rec.t_first_ns
    if rec.t_send_ns is None or t_first is None:
        return None
    return (t_first - rec.t_sched_ns) / _NS_PER_MS


def e2e_ms(rec: RequestRecord) -> float | None:
    """t_last - t_send."""
    t_last = rec.t_last_ns
    if rec.t_send_ns is None or t_last is None:
        return None
    return (t_last - rec.t_send_ns) / _NS_PER_MS


def e2e_sched_ms(rec: RequestRecord) -> float | None:
    """t_last - t_sched."""
    t_last = rec.t_last_ns
    if rec.t_send_ns is None or t_last is None:
        return None
    return (t_last - rec.t_sched_ns) / _NS_PER_MS


def ttst_ms(rec: RequestRecord) -> float | None:
    """t_second - t_send: when the second output token arrived (the first chunk's when it carried two or more);
    None for a request with fewer than two tokens in its chunks. TTFT plus the first decode step, as a user sees
    the answer start to move."""
    if rec.t_send_ns is None:
        return None
    seen = 0
    for t, n in zip(rec.chunk_t_ns, rec.chunk_tokens):
        seen += max(n, 0)
        if seen >= 2:
            return (t - rec.t_send_ns) / _NS_PER_MS
    return None


def first_chunk_tokens(rec: RequestRecord) -> int:
    """Tokens the first token-carrying chunk held (0: no such chunk)."""
    for n in rec.chunk_tokens:
        if n > 0:
            return n
    return 0


def tpot_ms(rec: RequestRecord) -> float | None:
    """(t_last - t_first) / (n_out - n_first_chunk): the time per token after the first chunk, with n_out the
    engine's count; None when no token came after the first chunk. The SLOs use this one (docs/metrics.md)."""
    t_first, t_last = rec.t_first_ns, rec.t_last_ns
    if t_first is None or t_last is None:
        return None
    after_first = rec.n_out - first_chunk_tokens(rec)
    if after_first < 1:
        return None
    return (t_last - t_first) / after_first / _NS_PER_MS


def tpot_n_minus_1_ms(rec: RequestRecord) -> float | None:
    """(t_last - t_first) / (n_out - 1): other tools' TPOT, short of `tpot_ms` when the first chunk held
    several tokens; None for n_out < 2."""
    t_first, t_last = rec.t_first_ns, rec.t_last_ns
    if t_first is None or t_last is None or rec.n_out < 2:
        return None
    return (t_last - t_first) / (rec.n_out - 1) / _NS_PER_MS


def ntpot_ms(rec: RequestRecord) -> float | None:
    """E2E / n_out (what some tools call TPOT)."""
    e2e = e2e_ms(rec)
    if e2e is None or rec.n_out < 1:
        return None
    return e2e / rec.n_out


def interactivity_tps(rec: RequestRecord) -> float | None:
    """1000 / TPOT_ms: decode tokens/s one user sees; None when TPOT is undefined or 0."""
    tpot = tpot_ms(rec)
    if tpot is None or tpot <= 0:
        return None
    return 1000.0 / tpot


def itl_ms(rec: RequestRecord) -> list[float]:
    """One value per output token after the first chunk: the chunk's gap to the previous
    token-carrying chunk divided evenly over the tokens it carried."""
    chunks = [(t, n) for t, n in zip(rec.chunk_t_ns, rec.chunk_tokens, strict=True) if n > 0]
    out: list[float] = []
    for (t_prev, _), (t, n) in pairwise(chunks):
        out.extend([(t - t_prev) / n / _NS_PER_MS] * n)
    return out


def completion_ns(rec: RequestRecord) -> int | None:
    """When the request finished: its last output token, else its last chunk, else None."""
    t_last = rec.t_last_ns
    if t_last is not None:
        return t_last
    return rec.chunk_t_ns[-1] if rec.chunk_t_ns else None


def meets_slos(rec: RequestRecord, slos: SLOs) -> bool:
    """A 'good' request: it succeeded and met every per-request limit that is set.

    TTFT and E2E are measured from t_send (the verdict separately checks that the
    client sent on time). A request whose tokens all came in its first chunk has no
    TPOT and so cannot break the TPOT limit.
    """
    if not rec.ok:
        return False
    if slos.ttft_ms is not None:
        v = ttft_ms(rec)
        if v is None or v > slos.ttft_ms:
            return False
    if slos.tpot_ms is not None:
        v = tpot_ms(rec)
        if v is not None and v > slos.tpot_ms:
            return False
    if slos.e2e_ms is not None:
        v = e2e_ms(rec)
        if v is None or v > slos.e2e_ms:
            return False
    return True
