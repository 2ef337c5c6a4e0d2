"""Can this run be trusted? VALID, INVALID, SATURATED or FAILED, with one plain sentence per problem.

VALID needs: enough successful measured requests for p95 (>= 100), a load
generator that kept up (open loop: the send-lag rule of `advisor.metrics.lag`),
an error rate under a bound, and (open loop) an engine whose queue did not
grow. The order (docs/metrics.md, "Validity"): FAILED when more than half of
the measured requests failed, the error kinds first; else INVALID when errors
are over their bound, n is too small for p95, the load generator lagged or
too many answers were shorter than asked,
whatever else the run shows; else SATURATED when the queue grew; else VALID.
In an open loop, requests still unfinished when the run stopped are the
queue's symptom (saturation), not failures counted against the error bound.

The thresholds below are the only ones: sweeps and capacity use them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from advisor.metrics.saturation import UNFINISHED_KINDS
from advisor.metrics.summary import NOT_SENT, Mode, RunSummary
from fileform import FileForm

Status = Literal["VALID", "INVALID", "SATURATED", "FAILED"]
STATUSES: tuple[Status, ...] = ("VALID", "INVALID", "SATURATED", "FAILED")

MAX_ERROR_RATE = 0.01  # above this the run is INVALID (errors are part of what was measured)
FAILED_ERROR_RATE = 0.5  # above this the run is FAILED: it measured failures, not an engine
MAX_SHORT_SHARE = 0.1  # successful requests answered with fewer tokens than asked (ignore_eos); above: INVALID
MIN_N_P95 = 100  # successful measured requests for a p95 to be reported as VALID
MIN_COMPLETION_RATIO = 0.9  # requests that ended in the window / arrivals in it; below: queue grew
QUEUE_GROWTH_FACTOR = 2.0  # TTFT_sched median, last third of the window vs first third
QUEUE_GROWTH_MIN_MS = 50.0  # ... and at least this much higher


@dataclass(frozen=True, slots=True)
class Verdict(FileForm):
    status: Status
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status must be one of {STATUSES}, got {self.status!r}")


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _kinds(s: RunSummary, leave_out: tuple[str, ...] = ()) -> str:
    kinds = {k: v for k, v in s.errors_by_kind.items() if k not in leave_out}
    return ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))


def _failed_reason(s: RunSummary) -> str:
    return (f"Most requests failed: {s.n_errors} of {s.n_requests} measured requests ({_kinds(s)}), so the run "
            "measured failures, not the engine; check that the engine or server serves this model and these "
            "request sizes (its log, `advisor generate`).")


def _error_reason(s: RunSummary, max_error_rate: float) -> str | None:
    """Requests that ended in an error, over the bound; an open loop's unfinished ones are saturation's, not here."""
    unfinished = s.saturation_signals.n_unfinished if s.mode == "open" and s.saturation_signals else 0
    n_failed = s.n_errors - unfinished
    if not s.n_requests or n_failed / s.n_requests <= max_error_rate:
        return None
    kinds = _kinds(s, (*UNFINISHED_KINDS, NOT_SENT) if unfinished else ())
    return (f"{n_failed / s.n_requests:.1%} of measured requests failed ({n_failed} of {s.n_requests}: {kinds}), "
            f"over the {max_error_rate:.1%} bound; check the engine's log and the request sizes against its limits.")


def _short_reason(s: RunSummary, max_short_share: float) -> str | None:
    if not s.n_ok or s.n_out_short / s.n_ok <= max_short_share:
        return None
    return (f"{s.n_out_short} of {s.n_ok} successful requests got fewer output tokens than they asked for, over the "
            f"{max_short_share:.0%} bound: every request asks for its exact length (ignore_eos), so the engine or "
            "server stopped early and the run did not serve the scenario's output lengths; check that it honours "
            "ignore_eos and min_tokens, and its context limit.")


def _saturation_reason(s: RunSummary, *, max_error_rate: float, min_completion_ratio: float,
                       queue_growth_factor: float, queue_growth_min_ms: float) -> str | None:
    sig = s.saturation_signals
    if sig is None:
        return None
    symptoms: list[str] = []
    if sig.arrival_rps and sig.ended_rps is not None and sig.ended_rps < min_completion_ratio * sig.arrival_rps:
        symptoms.append(f"requests ended slower ({_fmt(sig.ended_rps)} req/s) than they arrived "
                        f"({_fmt(sig.arrival_rps)} req/s)")
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


def verdict(summary: RunSummary, *, mode: Mode, max_error_rate: float = MAX_ERROR_RATE,
            failed_error_rate: float = FAILED_ERROR_RATE, min_n_p95: int = MIN_N_P95,
            min_completion_ratio: float = MIN_COMPLETION_RATIO, queue_growth_factor: float = QUEUE_GROWTH_FACTOR,
            queue_growth_min_ms: float = QUEUE_GROWTH_MIN_MS, max_short_share: float = MAX_SHORT_SHARE) -> Verdict:
    """Judge one run summary; every reason is a sentence the user can act on.

    SATURATED only for a run that held its error bound, had enough requests and a load generator that kept up:
    a run with too many errors or too few requests is INVALID (or FAILED) whatever else it shows.
    """
    if mode != summary.mode:
        raise ValueError(f"verdict mode {mode!r} differs from the summary's mode {summary.mode!r}")
    if summary.n_requests == 0:
        return Verdict("INVALID", ("No measured request was sent; check the scenario's duration, rate and warm-up.",))
    failed = summary.error_rate is not None and summary.error_rate > failed_error_rate
    reasons: list[str] = [_failed_reason(summary)] if failed else []
    if summary.n_ok < min_n_p95:
        reasons.append(f"n too small for p95 (n={summary.n_ok}): run at least {min_n_p95} successful measured "
                       "requests, with a longer duration or a higher rate.")
    lag = summary.lag_check.reason() if mode == "open" and summary.lag_check is not None else None
    if lag:
        reasons.append(lag)
    err = None if failed else _error_reason(summary, max_error_rate)
    if err:
        reasons.append(err)
    short = _short_reason(summary, max_short_share)
    if short:
        reasons.append(short)
    sat = None
    if mode == "open":
        sat = _saturation_reason(summary, max_error_rate=max_error_rate, min_completion_ratio=min_completion_ratio,
                                 queue_growth_factor=queue_growth_factor, queue_growth_min_ms=queue_growth_min_ms)
    if failed:
        return Verdict("FAILED", tuple(reasons[:1] + ([sat] if sat else []) + reasons[1:]))
    if lag or err or short or summary.n_ok < min_n_p95:  # what makes it INVALID first, then the saturation it also showed
        return Verdict("INVALID", tuple(reasons + ([sat] if sat else [])))
    return Verdict("SATURATED", (sat,)) if sat else Verdict("VALID")
