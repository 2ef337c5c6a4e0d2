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
    cap = schedule.settings.get("max_requests")
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


def offered_in(records: Sequence[RequestRecord], window_ns: tuple[int, int]) -> float:
    """Measured requests scheduled inside the window, per second of it."""
    start, end = window_ns
    n = sum(1 for r in records if not r.warmup and start <= r.t_sched_ns <= end)
    return n / ((end - start) / 1e9)


def planned_offered_rps(schedule: Schedule) -> float | None:
    if schedule.mode != "open" or schedule.duration_s <= 0:
        return None
    w0, w1 = schedule.window_s
    n = sum(1 for r in schedule.requests if w0 <= r.t_sched_s < w1)
    return n / (w1 - w0)

