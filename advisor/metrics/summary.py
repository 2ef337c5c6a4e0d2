"""Raw request records -> `RunSummary`: distributions, throughput, goodput, token accounting.

Measured requests are the non-warm-up ones. Failed requests never enter latency
distributions; they count in the error rate and as "not good" in SLO attainment.
Throughput counts work that happened inside the measurement window (see
`advisor.metrics.throughput`). Memory, energy and cost live elsewhere
(telemetry, cost); this module only reads request records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np

from advisor.loadgen.records import RequestRecord
from advisor.metrics import per_request as pr
from advisor.metrics import throughput as tp
from advisor.metrics.distribution import Distribution, json_float
from advisor.metrics.lag import LagCheck, check_lag
from advisor.metrics.saturation import UNFINISHED_KINDS, SaturationSignals, saturation_signals
from advisor.metrics.turns import SessionStats, session_stats
from scenarios.types import Mode, SLOs

NOT_SENT = "not_sent"  # error kind for a measured request the load generator never sent

# Distributions over successful measured requests, one value per request (ITL and client queue are special).
PER_REQUEST: dict[str, Callable[[RequestRecord], float | None]] = {
    "ttft_ms": pr.ttft_ms,
    "ttft_sched_ms": pr.ttft_sched_ms,
    "e2e_ms": pr.e2e_ms,
    "e2e_sched_ms": pr.e2e_sched_ms,
    "tpot_ms": pr.tpot_ms,
    "tpot_n_minus_1_ms": pr.tpot_n_minus_1_ms,
    "ntpot_ms": pr.ntpot_ms,
    "interactivity_tps": pr.interactivity_tps,
}
DISTRIBUTION_KEYS = ("ttft_ms", "ttft_sched_ms", "e2e_ms", "e2e_sched_ms", "tpot_ms", "ntpot_ms", "itl_ms",
                     "client_queue_ms", "interactivity_tps", "tpot_n_minus_1_ms")
# How `tpot_ms` was computed: since the first chunk's tokens are left out, "after_first_chunk"; a summary written
# before (no `tpot_n_minus_1_ms` in it) holds the (n_out - 1) form under `tpot_ms`, and says so when loaded.
TpotDefinition = Literal["after_first_chunk", "n_out_minus_1"]
SLO_METRICS = (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("e2e", "e2e_ms"))


@dataclass(frozen=True)
class RunSummary:
    n_requests: int  # measured (non-warm-up) requests attempted
    n_ok: int
    n_errors: int
    error_rate: float | None
    errors_by_kind: dict[str, int]
    window_s: float | None
    mode: Mode
    offered_rps: float | None
    ttft_ms: Distribution
    ttft_sched_ms: Distribution
    e2e_ms: Distribution
    e2e_sched_ms: Distribution
    tpot_ms: Distribution
    ntpot_ms: Distribution
    itl_ms: Distribution
    client_queue_ms: Distribution
    interactivity_tps: Distribution
    requests_per_s: float | None
    input_tokens_per_s: float | None
    output_tokens_per_s: float | None
    total_tokens_per_s: float | None
    peak_output_tokens_per_s: float | None
    goodput_rps: float | None
    slo_attainment: float | None
    slo_met: dict[str, bool | None]
    slo_margin: dict[str, float | None]
    n_in_total: int
    n_out_total: int
    n_out_client_total: int | None
    token_count_mismatch: int | None
    n_out_short: int
    saturation_signals: SaturationSignals | None = None  # addition to the schema: inputs of the verdict
    lag_check: LagCheck | None = None  # open loop: did the load generator keep up (advisor.metrics.lag)
    token_sources: dict[str, int] | None = None  # successful measured requests per token-count source
    sessions: SessionStats | None = None  # multi-turn runs: TTFT and prompt length by turn, context drops
    # (t_last - t_first) / (n_out - 1): other tools' TPOT, beside ours; a summary from before it existed reads
    # it from its own `tpot_ms` (then computed this way), and its `tpot_definition` says so
    tpot_n_minus_1_ms: Distribution = Distribution(n=0)
    tpot_definition: TpotDefinition = "after_first_chunk"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict with the schema's keys (no NaN or inf: missing values are None)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Distribution | SaturationSignals | LagCheck | SessionStats):
                out[f.name] = v.to_dict()
            elif f.name == "slo_margin":
                out[f.name] = {k: json_float(x) for k, x in v.items()}
            elif isinstance(v, dict):
                out[f.name] = dict(v)
            elif isinstance(v, float):
                out[f.name] = json_float(v)
            else:
                out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSummary:
        """Inverse of `to_dict`; a summary without `saturation_signals` loads with None there."""
        d = _with_tpot_forms(d)
        optional = ("saturation_signals", "lag_check", "token_sources", "sessions", "tpot_definition")
        required = [f.name for f in fields(cls) if f.name not in optional]
        missing = [k for k in required if k not in d]
        if missing:
            raise ValueError(f"run summary is missing keys {missing}; was it written by an older advisor?")
        kw: dict[str, Any] = {k: d[k] for k in required}
        for k in DISTRIBUTION_KEYS:
            kw[k] = Distribution.from_dict(d[k])
        kw["tpot_definition"] = d.get("tpot_definition", "after_first_chunk")
        for k in ("error_rate", "window_s", "offered_rps", "requests_per_s", "input_tokens_per_s",
                  "output_tokens_per_s", "total_tokens_per_s", "peak_output_tokens_per_s", "goodput_rps",
                  "slo_attainment"):
            kw[k] = json_float(d[k])
        kw["errors_by_kind"] = {str(k): int(v) for k, v in d["errors_by_kind"].items()}
        kw["slo_met"] = {k: (None if v is None else bool(v)) for k, v in d["slo_met"].items()}
        kw["slo_margin"] = {k: json_float(v) for k, v in d["slo_margin"].items()}
        sat = d.get("saturation_signals")
        kw["saturation_signals"] = None if sat is None else SaturationSignals.from_dict(sat)
        lag = d.get("lag_check")
        kw["lag_check"] = None if lag is None else LagCheck.from_dict(lag)
        src = d.get("token_sources")
        kw["token_sources"] = None if src is None else {str(k): int(v) for k, v in src.items()}
        sess = d.get("sessions")
        kw["sessions"] = None if sess is None else SessionStats.from_dict(sess)
        return cls(**kw)

    @classmethod
    def from_saved(cls, d: dict[str, Any], mode: Mode | None = None) -> RunSummary:
        """`from_dict` of a summary its writer left keys out of (hand-made runs, other tools' exports): a missing
        distribution is empty (every percentile "n too small"), a missing rate or figure None, a missing count 0
        and a missing map empty, as every reader assumed of a missing key before summaries were typed; a missing
        mode is `mode` (the schedule's)."""
        mode = d.get("mode", mode)
        if mode is None:
            raise ValueError("neither the summary nor the schedule says the run's mode")
        return cls.from_dict({**_ABSENT, "mode": mode, **_with_tpot_forms(d)})


def _with_tpot_forms(d: dict[str, Any]) -> dict[str, Any]:
    """A summary written before `tpot_n_minus_1_ms` existed computed its `tpot_ms` that way: both names read it,
    and `tpot_definition` says that `tpot_ms` is the (n_out - 1) form (its records give the new one)."""
    if "tpot_n_minus_1_ms" in d or "tpot_ms" not in d:
        return d
    return {**d, "tpot_n_minus_1_ms": d["tpot_ms"], "tpot_definition": "n_out_minus_1"}


_ABSENT: dict[str, Any] = {
    **{k: Distribution(n=0).to_dict() for k in DISTRIBUTION_KEYS},
    "n_requests": 0, "n_ok": 0, "n_errors": 0, "errors_by_kind": {}, "slo_met": {}, "slo_margin": {},
    "n_in_total": 0, "n_out_total": 0, "n_out_short": 0,
    **dict.fromkeys(("error_rate", "window_s", "offered_rps", "requests_per_s", "input_tokens_per_s",
                     "output_tokens_per_s", "total_tokens_per_s", "peak_output_tokens_per_s", "goodput_rps",
                     "slo_attainment", "n_out_client_total", "token_count_mismatch")),
}


def _rate(count: float, window_s: float | None) -> float | None:
    return None if not window_s else count / window_s


def _distributions(ok: Sequence[RequestRecord], measured: Sequence[RequestRecord]) -> dict[str, Distribution]:
    dists = {name: Distribution.from_values(v for r in ok if (v := fn(r)) is not None)
             for name, fn in PER_REQUEST.items()}
    dists["itl_ms"] = Distribution.from_values(v for r in ok for v in pr.itl_ms(r))  # pooled over tokens
    # Every sent request, failed ones too: this measures the load generator, not the engine.
    dists["client_queue_ms"] = Distribution.from_values(v for r in measured if (v := pr.client_queue_ms(r)) is not None)
    assert set(dists) == set(DISTRIBUTION_KEYS)
    return dists


def _slo_checks(ok: Sequence[RequestRecord], slos: SLOs) -> tuple[dict[str, bool | None], dict[str, float | None]]:
    met: dict[str, bool | None] = {}
    margin: dict[str, float | None] = {}
    for short, key in SLO_METRICS:
        limit = getattr(slos, key)
        fn = PER_REQUEST[key]
        values = [v for r in ok if (v := fn(r)) is not None]
        if limit is None or not values:
            met[short], margin[key] = None, None
            continue
        p = float(np.percentile(values, slos.percentile))
        met[short], margin[key] = p <= limit, limit - p
    return met, margin


def cut_by_stop(r: RequestRecord) -> bool:
    """A request the stop of the run cancelled: in flight then, or never sent."""
    return r.error_kind in UNFINISHED_KINDS


def summarize(records: Sequence[RequestRecord], *, mode: Mode, slos: SLOs, window_ns: tuple[int, int] | None,
              offered_rps: float | None = None, stopped: bool = False) -> RunSummary:
    """Summarize one run's raw records (warm-up included; they are excluded where docs/metrics.md says).

    `stopped`: a signal stopped the run, which is measured up to there: the requests it cancelled, in flight
    or never sent, are not measured requests (neither failures nor a queue that grew: the user stopped them).
    Their chunks that did arrive still count as tokens. An open loop's `window_ns` should end at the stop.
    """
    if mode not in ("open", "closed", "offline"):
        raise ValueError(f"mode must be 'open', 'closed' or 'offline', got {mode!r}")
    if mode == "open" and window_ns is None:
        raise ValueError("an open-loop run needs its measurement window: window_ns=(warmup_s, warmup_s + duration_s) in ns")
    measured = [r for r in records if not r.warmup and not (stopped and cut_by_stop(r))]
    ok = [r for r in measured if r.ok]
    errors = Counter(r.error_kind or NOT_SENT for r in measured if not r.ok)
    n = len(measured)

    window = tp.resolve_window(measured, window_ns)
    window_s = None if window is None else (window[1] - window[0]) / 1e9
    out_tok = tp.output_tokens_in(records, window) if window else 0
    in_tok = tp.input_tokens_in(records, window) if window else 0
    n_good = sum(1 for r in ok if pr.meets_slos(r, slos))
    slo_met, slo_margin = _slo_checks(ok, slos)

    with_client = [r for r in ok if r.n_out_client is not None]
    dists = _distributions(ok, measured)
    signals = saturation_signals(records, measured, window)
    lag = None
    if mode == "open":
        lags = [v for r in measured if (v := pr.client_queue_ms(r)) is not None]
        lag = check_lag(lags, dists["ttft_ms"].p50, signals.arrival_rps)
    return RunSummary(
        n_requests=n,
        n_ok=len(ok),
        n_errors=n - len(ok),
        error_rate=(n - len(ok)) / n if n else None,
        errors_by_kind=dict(sorted(errors.items())),
        window_s=window_s,
        mode=mode,
        offered_rps=offered_rps if mode == "open" else None,
        **dists,
        requests_per_s=_rate(tp.completed_in(measured, window), window_s) if window else None,
        input_tokens_per_s=_rate(in_tok, window_s),
        output_tokens_per_s=_rate(out_tok, window_s),
        total_tokens_per_s=_rate(in_tok + out_tok, window_s),
        peak_output_tokens_per_s=tp.peak_output_tokens_per_s(records, window) if window else None,
        goodput_rps=_rate(n_good, window_s),
        slo_attainment=n_good / n if n else None,
        slo_met=slo_met,
        slo_margin=slo_margin,
        n_in_total=sum(r.n_in for r in ok),
        n_out_total=sum(r.n_out for r in ok),
        n_out_client_total=sum(r.n_out_client or 0 for r in with_client) if with_client else None,
        token_count_mismatch=sum(r.n_out - (r.n_out_client or 0) for r in with_client) if with_client else None,
        n_out_short=sum(1 for r in ok if r.n_out < r.max_tokens),
        saturation_signals=signals,
        lag_check=lag,
        token_sources=dict(Counter(r.token_source or "unknown" for r in ok)) if ok else None,
        sessions=session_stats(records),
    )
