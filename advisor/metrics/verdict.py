"""Can this run be trusted? VALID, INVALID or SATURATED, with one plain sentence per problem.

VALID needs: enough successful measured requests for p95 (>= 100), a load
generator that kept up (open loop: p99 of t_send - t_sched under a few ms), an
error rate under a bound, and (open loop) an engine that was not saturated.
SATURATED wins over INVALID unless the load generator fell behind, in which case
the symptoms may be the client's own and the run is INVALID.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from advisor.metrics.summary import Mode, RunSummary

Status = Literal["VALID", "INVALID", "SATURATED"]
STATUSES: tuple[Status, ...] = ("VALID", "INVALID", "SATURATED")


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status must be one of {STATUSES}, got {self.status!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reasons": list(self.reasons)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        return cls(status=d["status"], reasons=tuple(str(r) for r in d.get("reasons", ())))


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _lag_reason(s: RunSummary, limit_ms: float) -> str | None:
    q = s.client_queue_ms
    lag, which = (q.p99, "p99") if q.p99 is not None else (q.max, "max")
    if lag is None or lag < limit_ms:
        return None
    return (f"The load generator fell behind: {which} send lag (t_send - t_sched) was {lag:.2f} ms, over the "
            f"{limit_ms:g} ms limit, so the offered load was not the scheduled one; lower the rate or run the "
            "client on a less busy machine.")


def _error_reason(s: RunSummary, max_error_rate: float) -> str | None:
    if s.error_rate is None or s.error_rate <= max_error_rate:
        return None
    kinds = ", ".join(f"{k} x{v}" for k, v in sorted(s.errors_by_kind.items(), key=lambda kv: -kv[1]))
    return (f"{s.error_rate:.1%} of measured requests failed ({s.n_errors} of {s.n_requests}: {kinds}), over the "
            f"{max_error_rate:.1%} bound; check the engine's log and the request sizes against its limits.")


def _saturation_reason(s: RunSummary, *, max_error_rate: float, min_completion_ratio: float,
                       queue_growth_factor: float, queue_growth_min_ms: float) -> str | None:
    sig = s.saturation_signals
    if sig is None:
        return None
    symptoms: list[str] = []
    if sig.arrival_rps and sig.completed_rps is not None and sig.completed_rps < min_completion_ratio * sig.arrival_rps:
        symptoms.append(f"requests completed slower than they arrived ({_fmt(sig.arrival_rps)} req/s)")
    first, last = sig.ttft_sched_p50_first_third_ms, sig.ttft_sched_p50_last_third_ms
    if first is not None and last is not None and last > queue_growth_factor * first and last - first > queue_growth_min_ms:
        symptoms.append(f"median TTFT_sched rose from {first:.0f} ms in the first third of the window "
                        f"to {last:.0f} ms in the last")
    if s.n_requests and sig.n_unfinished / s.n_requests > max_error_rate:
        symptoms.append(f"{sig.n_unfinished} requests were still unfinished at the end")
    if not symptoms:
        return None
    offered = s.offered_rps if s.offered_rps is not None else sig.arrival_rps
    offered_txt = _fmt(offered) if offered is not None else "?"
    completed_txt = _fmt(sig.completed_rps) if sig.completed_rps is not None else "?"
    return (f"The run saturated at {offered_txt} req/s offered (completed {completed_txt} req/s): "
            f"{'; '.join(symptoms)}, so its latencies are not steady-state; lower the rate to find the capacity.")


def verdict(summary: RunSummary, *, mode: Mode, lag_p99_ms_limit: float = 5.0, max_error_rate: float = 0.01,
            min_n_p95: int = 100, min_completion_ratio: float = 0.9, queue_growth_factor: float = 2.0,
            queue_growth_min_ms: float = 50.0) -> Verdict:
    """Judge one run summary; every reason is a sentence the user can act on."""
    if mode != summary.mode:
        raise ValueError(f"verdict mode {mode!r} differs from the summary's mode {summary.mode!r}")
    if summary.n_requests == 0:
        return Verdict("INVALID", ("No measured request was sent; check the scenario's duration, rate and warm-up.",))
    reasons: list[str] = []
    if summary.n_ok < min_n_p95:
        reasons.append(f"n too small for p95 (n={summary.n_ok}): run at least {min_n_p95} successful measured "
                       "requests, with a longer duration or a higher rate.")
    lag = _lag_reason(summary, lag_p99_ms_limit) if mode == "open" else None
    if lag:
        reasons.append(lag)
    err = _error_reason(summary, max_error_rate)
    if err:
        reasons.append(err)
    sat = None
    if mode == "open":
        sat = _saturation_reason(summary, max_error_rate=max_error_rate, min_completion_ratio=min_completion_ratio,
                                 queue_growth_factor=queue_growth_factor, queue_growth_min_ms=queue_growth_min_ms)
    if sat:
        reasons.insert(0, sat)
    if sat and not lag:
        return Verdict("SATURATED", tuple(reasons))
    return Verdict("INVALID" if reasons else "VALID", tuple(reasons))
