"""An embed run's records -> its summary: latency distribution, inputs/s, tokens/s, padding waste, goodput, verdict,
cost.

Pure functions over saved records (docs/metrics.md, "Embedding runs" defines each figure). The window is
the generation runs' rule: open loop `[warmup_s, warmup_s + duration_s]`, cut to the last measured
answer when a request cap ended the schedule sooner; offline from the first measured send to the last
measured answer. A rate counts requests whose answer arrived inside the window.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.catalog.cost import usd_per_million_tokens
from advisor.embed.drive import EmbedRecord
from advisor.metrics.distribution import Distribution
from advisor.metrics.lag import LagCheck, check_lag
from advisor.metrics.verdict import FAILED_ERROR_RATE, MAX_ERROR_RATE, MIN_COMPLETION_RATIO
from fileform import FileForm
from scenarios.embed_schedule import EmbedSchedule

# successful measured requests for VALID: the least that gives a p95 (advisor.metrics.distribution); the
# generation verdict asks 100, which embed-ingest's batches of 32 would need minutes for on a small machine
MIN_N_EMBED = 20


@dataclass(frozen=True)
class EmbedSummary(FileForm):
    n_requests: int  # measured requests attempted
    n_ok: int
    errors_by_kind: dict[str, int]
    window_s: float
    latency_ms: Distribution  # answer minus send, successful measured requests
    send_lag_ms: Distribution
    send_lag_limit_ms: float | None  # None: not an open-loop run
    late_sends: int
    requests_per_s: float
    inputs_per_s: float
    tokens_per_s: float | None  # None when the engine or server reports no token counts
    goodput_rps: float | None  # None without an e2e SLO
    slo_attainment: float | None
    slo_met: bool | None
    tokens_per_input: float | None
    unfinished: int  # measured requests whose answer came after the window (or never)
    verdict: str  # VALID, INVALID, SATURATED or FAILED
    reasons: tuple[str, ...]
    usd_per_hour: float | None = None
    usd_per_million_tokens: float | None = None
    usd_per_million_inputs: float | None = None  # embed: per 1M inputs embedded; rerank: per 1M passages reranked
    task: str = "embed"
    # (padded - real) / padded tokens per successful measured request; n=0 unless the engine said it for every one
    padding_waste: Distribution = Distribution(n=0)
    padding_waste_run: float | None = None  # the same over the window's requests summed; None: not known


def window_ns(schedule: EmbedSchedule, records: list[EmbedRecord]) -> tuple[int, int]:
    """The measurement window [start, end] in ns from the run's start."""
    measured = [r for r in records if not r.warmup]
    st = schedule.settings
    if st.mode == "offline":
        ends = [r.t_done_ns for r in measured if r.t_done_ns is not None]
        return min(r.t_send_ns for r in measured), max(ends) if ends else min(r.t_send_ns for r in measured)
    start, end = int(st.warmup_s * 1e9), int((st.warmup_s + st.duration_s) * 1e9)
    if st.max_requests is not None and len(records) >= st.max_requests:  # the cap ended the schedule sooner
        ends = [r.t_done_ns for r in measured if r.t_done_ns is not None]
        end = min(end, max(ends)) if ends else end
    return start, end


def summarise(schedule: EmbedSchedule, records: list[EmbedRecord], usd_per_hour: float | None = None) -> EmbedSummary:
    """The run's summary (docs/metrics.md, "Embedding runs")."""
    measured = [r for r in records if not r.warmup]
    ok = [r for r in measured if r.ok]
    errors: dict[str, int] = {}
    for r in measured:
        if not r.ok:
            errors[r.error_kind or "not_sent"] = errors.get(r.error_kind or "not_sent", 0) + 1
    start, end = window_ns(schedule, records) if measured else (0, 0)
    window_s = max(end - start, 1) / 1e9
    inside = [r for r in ok if r.t_done_ns is not None and start <= r.t_done_ns <= end]
    latency = Distribution.from_values(r.latency_ms for r in ok if r.latency_ms is not None)
    lags = [r.send_lag_ms for r in measured]
    st = schedule.settings
    # the generation runs' send-lag rule (advisor.metrics.lag), with the latency median in place of TTFT's
    lag = check_lag(lags, latency.p50, len(measured) / st.duration_s) if st.mode == "open" and lags else None
    counted = [r.n_tokens for r in inside]
    tokens_known = bool(inside) and all(n is not None for n in counted)
    tokens_per_s = sum(n for n in counted if n is not None) / window_s if tokens_known else None
    waste, waste_run = padding(ok, inside)
    e2e = schedule.slos.e2e_ms
    good = [r for r in inside if e2e is not None and r.latency_ms is not None and r.latency_ms <= e2e]
    at = latency.at(schedule.slos.percentile) if e2e is not None else None
    n_in = sum(r.n_inputs for r in inside)
    unfinished = sum(1 for r in measured if r.ok and r.t_done_ns is not None and r.t_done_ns > end) + \
        sum(1 for r in measured if r.t_done_ns is None)
    verdict, reasons = retrieval_verdict(len(measured), len(ok), lag, unfinished, errors)
    cost = (usd_per_million_tokens(usd_per_hour, 1.0, tokens_per_s)
            if usd_per_hour is not None and tokens_per_s is not None else None)
    return EmbedSummary(
        n_requests=len(measured), n_ok=len(ok), errors_by_kind=errors, window_s=window_s, latency_ms=latency,
        send_lag_ms=Distribution.from_values(lags), send_lag_limit_ms=lag.limit_ms if lag else None,
        late_sends=lag.n_late if lag else 0,
        requests_per_s=len(inside) / window_s, inputs_per_s=n_in / window_s, tokens_per_s=tokens_per_s,
        goodput_rps=len(good) / window_s if e2e is not None else None,
        slo_attainment=len(good) / len(measured) if e2e is not None and measured else None,
        slo_met=(at <= e2e) if at is not None and e2e is not None else None,
        tokens_per_input=(sum(n for n in counted if n is not None) / n_in) if tokens_known and n_in else None,
        unfinished=unfinished, verdict=verdict, reasons=tuple(reasons), usd_per_hour=usd_per_hour,
        usd_per_million_tokens=cost, task=schedule.task,
        usd_per_million_inputs=(usd_per_million_tokens(usd_per_hour, 1.0, n_in / window_s)
                                if usd_per_hour is not None else None),
        padding_waste=waste, padding_waste_run=waste_run)


def padding(ok: list[EmbedRecord], inside: list[EmbedRecord]) -> tuple[Distribution, float | None]:
    """The padding waste per successful request (a distribution) and over the window's requests, (sum of padded -
    sum of real) / sum of padded tokens; not known (n=0, None) unless the engine said it for every one of them."""
    per_request = [r.padding_waste for r in ok]
    waste = Distribution.from_values(w for w in per_request if w is not None) \
        if per_request and all(w is not None for w in per_request) else Distribution(n=0)
    if not inside or any(r.padding_waste is None for r in inside):
        return waste, None
    padded = sum(r.n_tokens_padded or 0 for r in inside)
    return waste, (padded - sum(r.n_tokens or 0 for r in inside)) / padded


def retrieval_verdict(n: int, n_ok: int, lag: LagCheck | None, unfinished: int, errors: dict[str, int]
             ) -> tuple[str, list[str]]:
    """The generation verdict's order and error bounds (advisor.metrics.verdict); its own minimum sample."""
    n_failed = sum(errors.values())
    if n == 0 or n_ok == 0 or n_failed / n > FAILED_ERROR_RATE:
        return "FAILED", [f"most measured requests failed: {n_failed} of {n} ({errors or 'none sent'}), so the run "
                          "measured failures, not an engine"]
    reasons = []
    if n_failed / n > MAX_ERROR_RATE:
        reasons.append(f"{n_failed} of {n} measured requests failed ({errors}), over the {MAX_ERROR_RATE:.0%} bound")
    if n_ok < MIN_N_EMBED:
        reasons.append(f"{n_ok} successful measured requests are too few for a p95 (at least {MIN_N_EMBED}): "
                       "raise --duration or --rate")
    if lag is not None and not lag.ok:
        reasons.append(str(lag.reason()))
    if reasons:
        return "INVALID", reasons
    if (n - unfinished) / n < MIN_COMPLETION_RATIO:  # a request or two just before the end is not saturation
        return "SATURATED", [f"{unfinished} of {n} measured requests were answered after the window or never "
                             f"(more than {1 - MIN_COMPLETION_RATIO:.0%}): the engine did not keep up with the "
                             "offered rate"]
    return "VALID", [f"{n_failed} of {n} requests failed ({errors})"] if errors else []
