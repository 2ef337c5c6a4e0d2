"""The window an open-loop run's rates are divided by: the time the requests really took.

docs/metrics.md, "The real window": from the scheduled start of measurement to the planned end, cut
short at the signal that stopped the run, or, when the request cap (--max-requests) ended the schedule
before its duration did, at the last measured request's end. The offered rate is then counted over
the same cut window.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.loadgen.records import RequestRecord
from scenarios.types import Schedule


def capped(schedule: Schedule) -> bool:
    """The request cap (--max-requests) ended the schedule before its duration did."""
    cap = schedule.settings.max_requests if schedule.settings is not None else None
    return cap is not None and len(schedule.requests) >= cap


def real_window_ns(window_ns: tuple[int, int] | None, records: Sequence[RequestRecord], stopped_ns: int | None,
                   cut_by_cap: bool) -> tuple[int, int] | None:
    """The open-loop window the requests actually took (docs/metrics.md, "The measurement window").

    It starts where measurement was scheduled to start and ends at the planned end, or earlier: at the
    signal that stopped the run, or, when the request cap ended the schedule, at the last measured
    request's end (a rate divided by time no request was offered in is a false figure).
    """
    if window_ns is None:
        return None
    start, end = window_ns
    if stopped_ns is not None and start < stopped_ns < end:
        end = stopped_ns
    if cut_by_cap:
        ends = [t for r in records if not r.warmup and r.t_send_ns is not None
                and (t := r.t_last_ns if r.t_last_ns is not None else r.t_end_ns) is not None]
        if ends and start < max(ends) < end:
            end = max(ends)
    return start, end


def compute_offered_rps(schedule: Schedule, records: Sequence[RequestRecord],
                        real_ns: tuple[int, int] | None) -> float | None:
    """The run's offered rate, computed here once (docs/metrics.md, "The real window"); saved once, as the
    summary's `offered_rps`, and read through `advisor.run.rates.offered_rps`.

    Open loop: the measured requests scheduled inside the window, per second of it: the planned window
    from the schedule, or, where a cap or a signal cut it (`real_ns`), the cut window from the records.
    Open-loop sessions: the settings' target rate (later turns fall due at run time). Else None.
    """
    if schedule.mode != "open":
        return None
    w0, w1 = schedule.window_s
    if real_ns is not None and real_ns != (int(w0 * 1e9), int(w1 * 1e9)):
        return offered_in(records, real_ns)
    if schedule.sessions is not None:
        return schedule.settings.target_rps if schedule.settings is not None else None
    if schedule.duration_s <= 0:
        return None
    n = sum(1 for r in schedule.requests if w0 <= r.t_sched_s < w1)
    return n / (w1 - w0)


def offered_in(records: Sequence[RequestRecord], window_ns: tuple[int, int]) -> float:
    """Measured requests scheduled inside the window, per second of it."""
    start, end = window_ns
    n = sum(1 for r in records if not r.warmup and start <= r.t_sched_ns <= end)
    return n / ((end - start) / 1e9)

