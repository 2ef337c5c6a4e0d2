"""A rag run's records -> its summary: per-stage times, end-to-end times, bottleneck, goodput, verdict, cost.

Pure functions over saved records (docs/metrics.md, "RAG pipeline runs" defines each figure). The window
and the verdict are the embed runs' (`advisor.embed.metrics`): open loop `[warmup_s, warmup_s +
duration_s]`, cut to the last measured answer when a request cap ended the schedule sooner; an answer
counts toward a rate when it was complete inside the window.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.embed.metrics import retrieval_verdict
from advisor.metrics.distribution import Distribution
from advisor.metrics.lag import check_lag
from advisor.rag.drive import STAGES, RagRecord
from fileform import FileForm
from scenarios.rag_schedule import RagSchedule


@dataclass(frozen=True)
class RagSummary(FileForm):
    n_requests: int  # measured questions sent
    n_ok: int  # answered
    errors_by_kind: dict[str, int]
    errors_by_stage: dict[str, int]
    window_s: float
    ttfa_ms: Distribution  # time to first answer token, from the user's send
    e2e_ms: Distribution  # the user's send to the last answer token
    stage_ms: dict[str, Distribution]  # embed, search, rerank (when there is a rerank stage), generate
    gen_ttft_ms: Distribution  # the generation stage's own time to first token (from its handoff)
    gen_tpot_ms: Distribution
    stage_share_p50: dict[str, float]  # each stage's p50 over the p50 end-to-end time
    bottleneck: str | None  # the stage with the largest share; None without an answered request
    bottleneck_reason: str
    send_lag_ms: Distribution
    send_lag_limit_ms: float | None
    late_sends: int
    answers_per_s: float
    goodput_rps: float | None  # answers inside the window meeting every end-to-end SLO set, per second
    slo_attainment: float | None
    slo_met: bool | None
    unfinished: int
    verdict: str
    reasons: tuple[str, ...]
    usd_per_hour: float | None = None
    usd_per_answer: float | None = None  # the machine's price over answers/s
    usd_per_good_answer: float | None = None  # the machine's price over goodput: an answer within the SLO


def window_ns(schedule: RagSchedule, records: list[RagRecord]) -> tuple[int, int]:
    """The measurement window [start, end] in ns from the run's start (the embed runs' rule)."""
    measured = [r for r in records if not r.warmup]
    st = schedule.settings
    ends = [r.t_done_ns for r in measured if r.ok and r.t_done_ns is not None]
    if st.mode == "offline":
        first = min(r.t_send_ns for r in measured)
        return first, max(ends) if ends else first
    start, end = int(st.warmup_s * 1e9), int((st.warmup_s + st.duration_s) * 1e9)
    if st.max_requests is not None and len(records) >= st.max_requests and ends:
        end = min(end, max(ends))
    return start, end


def good(r: RagRecord, schedule: RagSchedule) -> bool:
    """Whether an answered request met every end-to-end SLO the scenario sets (ttft_ms: time to first answer
    token; e2e_ms: to the last; tpot_ms: the answer's time per token)."""
    s = schedule.slos
    checks = ((s.ttft_ms, r.ttfa_ms), (s.e2e_ms, r.e2e_ms), (s.tpot_ms, r.gen_tpot_ms))
    return r.ok and all(v is not None and v <= lim for lim, v in checks if lim is not None)


def summarise(schedule: RagSchedule, records: list[RagRecord], has_rerank: bool,
              usd_per_hour: float | None = None) -> RagSummary:
    """The run's summary (docs/metrics.md, "RAG pipeline runs")."""
    measured = [r for r in records if not r.warmup]
    ok = [r for r in measured if r.ok]
    errors: dict[str, int] = {}
    stages_failed: dict[str, int] = {}
    for r in measured:
        if not r.ok:
            errors[r.error_kind or "not_sent"] = errors.get(r.error_kind or "not_sent", 0) + 1
            stages_failed[r.failed_stage or "?"] = stages_failed.get(r.failed_stage or "?", 0) + 1
    start, end = window_ns(schedule, records) if measured else (0, 0)
    window_s = max(end - start, 1) / 1e9
    inside = [r for r in ok if start <= r.t_done_ns <= end]  # type: ignore[operator]
    names = [s for s in STAGES if has_rerank or s != "rerank"]
    per = [r.stage_ms() or {} for r in ok]
    stage = {s: Distribution.from_values(p[s] for p in per) for s in names}
    ttfa = Distribution.from_values(r.ttfa_ms for r in ok if r.ttfa_ms is not None)
    e2e = Distribution.from_values(r.e2e_ms for r in ok if r.e2e_ms is not None)
    share = ({s: d.p50 / e2e.p50 for s, d in stage.items() if d.p50 is not None}
             if e2e.p50 else {})
    neck = max(share, key=lambda s: share[s]) if share else None
    neck_reason = (f"{neck} is the bottleneck: its p50 {stage[neck].p50:.4g} ms is {share[neck]:.0%} of the p50 "
                   f"end-to-end time {e2e.p50:.4g} ms" if neck is not None and e2e.p50 is not None
                   else "no answered request: no bottleneck to name")
    lags = [r.send_lag_ms for r in measured]
    st = schedule.settings
    lag = check_lag(lags, ttfa.p50, len(measured) / st.duration_s) if st.mode == "open" and lags else None
    slos = schedule.slos
    limited = slos.any_limit
    n_good = sum(1 for r in inside if good(r, schedule))
    meets = [(lim, d.at(slos.percentile)) for lim, d in ((slos.ttft_ms, ttfa), (slos.e2e_ms, e2e))
             if lim is not None]
    # None until every limited percentile is known (too few answers for a p95 is no verdict on the SLO)
    slo_met = all(v <= lim for lim, v in meets) if meets and all(v is not None for _, v in meets) else None  # type: ignore[operator]
    unfinished = sum(1 for r in ok if r.t_done_ns > end) + sum(1 for r in measured if r.t_done_ns is None)  # type: ignore[operator]
    verdict, reasons = retrieval_verdict(len(measured), len(ok), lag, unfinished, errors)
    answers_per_s = len(inside) / window_s
    goodput = n_good / window_s if limited else None
    return RagSummary(
        n_requests=len(measured), n_ok=len(ok), errors_by_kind=errors, errors_by_stage=stages_failed,
        window_s=window_s, ttfa_ms=ttfa, e2e_ms=e2e, stage_ms=stage,
        gen_ttft_ms=Distribution.from_values(r.gen_ttft_ms for r in ok if r.gen_ttft_ms is not None),
        gen_tpot_ms=Distribution.from_values(r.gen_tpot_ms for r in ok if r.gen_tpot_ms is not None),
        stage_share_p50=share, bottleneck=neck, bottleneck_reason=neck_reason,
        send_lag_ms=Distribution.from_values(lags), send_lag_limit_ms=lag.limit_ms if lag else None,
        late_sends=lag.n_late if lag else 0, answers_per_s=answers_per_s, goodput_rps=goodput,
        slo_attainment=n_good / len(measured) if limited and measured else None, slo_met=slo_met,
        unfinished=unfinished, verdict=verdict, reasons=tuple(reasons), usd_per_hour=usd_per_hour,
        usd_per_answer=usd_per_hour / 3600.0 / answers_per_s if usd_per_hour is not None and answers_per_s else None,
        usd_per_good_answer=(usd_per_hour / 3600.0 / goodput
                             if usd_per_hour is not None and goodput else None))
