"""Raw request records -> `RunSummary`: distributions, throughput, goodput, token accounting.

Measured requests are the non-warm-up ones. Failed requests never enter latency
distributions; they count in the error rate and as "not good" in SLO attainment.
Throughput counts work that happened inside the measurement window (see
`advisor.metrics.throughput`). Memory, energy and cost live elsewhere
(telemetry, cost); this module only reads request records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import (
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from advisor.loadgen.records import RequestRecord
from advisor.metrics import per_request as pr
from advisor.metrics import throughput as tp
from advisor.metrics.distribution import Distribution
from advisor.metrics.lag import LagCheck, check_lag
from advisor.metrics.registry import METRIC_BY_KEY, METRICS
from advisor.metrics.saturation import UNFINISHED_KINDS, SaturationSignals, saturation_signals
from advisor.metrics.turns import SessionStats, session_stats
from fileform import FileForm
from scenarios.types import Mode, SLOs

NOT_SENT = "not_sent"  # error kind for a measured request the load generator never sent

# How `tpot_ms` was computed: "after_first_chunk" (the first chunk's tokens left out); a summary saved without
# `tpot_n_minus_1_ms` holds the (n_out - 1) form under `tpot_ms`, and says so when loaded.
TpotDefinition = Literal["after_first_chunk", "n_out_minus_1"]
SLO_METRICS = (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("e2e", "e2e_ms"))


EMPTY = Distribution(n=0)


@dataclass(frozen=True, kw_only=True)
class RunSummary(FileForm):
    """result.json's `summary`. A key a saved summary lacks (hand-made runs, other tools' exports) reads as its
    default: a missing rate or figure None, a missing count 0 and a missing map empty, as every reader assumed
    of a missing key before summaries were typed. A metric's distribution the file lacks is not recorded
    (`recorded` gives None: the tables say "not recorded"); read by name (`summary.ttft_ms`) it is empty."""

    n_requests: int = 0  # measured (non-warm-up) requests attempted
    n_ok: int = 0
    n_errors: int = 0
    error_rate: float | None = None
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    window_s: float | None = None
    mode: Mode
    offered_rps: float | None = None
    # one per registered metric (`registry.METRICS`) that the run recorded; the file holds each under its own key
    distributions: dict[str, Distribution] = field(default_factory=dict)
    requests_per_s: float | None = None
    input_tokens_per_s: float | None = None
    output_tokens_per_s: float | None = None
    total_tokens_per_s: float | None = None
    peak_output_tokens_per_s: float | None = None
    goodput_rps: float | None = None
    slo_attainment: float | None = None
    slo_met: dict[str, bool | None] = field(default_factory=dict)
    slo_margin: dict[str, float | None] = field(default_factory=dict)
    n_in_total: int = 0
    n_out_total: int = 0
    n_out_client_total: int | None = None
    token_count_mismatch: int | None = None
    n_out_short: int = 0
    saturation_signals: SaturationSignals | None = None  # addition to the schema: inputs of the verdict
    lag_check: LagCheck | None = None  # open loop: did the load generator keep up (advisor.metrics.lag)
    token_sources: dict[str, int] | None = None  # successful measured requests per token-count source
    sessions: SessionStats | None = None  # multi-turn runs: TTFT and prompt length by turn, context drops
    # how `tpot_ms` was computed: a summary from before `tpot_n_minus_1_ms` ((t_last - t_first) / (n_out - 1),
    # other tools' TPOT) existed reads that from its own `tpot_ms` (then computed this way), and says so here
    tpot_definition: TpotDefinition = "after_first_chunk"

    def __getattr__(self, name: str) -> Distribution:
        """`summary.ttft_ms`: a registered metric's distribution (empty when the run did not record it)."""
        if name not in METRIC_BY_KEY:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return self.__dict__.get("distributions", {}).get(name, EMPTY)

    def recorded(self, key: str) -> Distribution | None:
        """A registered metric's distribution, or None when the run was saved before the metric existed."""
        return self.distributions.get(key)

    @model_validator(mode="wrap")
    @classmethod
    def _errors_at_file_keys(cls, d: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """An error in a distribution names it where the file holds it (`summary.ttft_ms.p95`)."""
        try:
            return handler(d)
        except ValidationError as e:
            errors = [{"type": x["type"], "loc": tuple(p for p in x["loc"] if p != "distributions"),
                       "input": x["input"], **({"ctx": x["ctx"]} if "ctx" in x else {})} for x in e.errors()]
            raise ValidationError.from_exception_data(e.title, errors) from None  # type: ignore[arg-type]

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Each distribution under its metric's key, where `distributions` is declared (result.json's shape)."""
        out: dict[str, Any] = {}
        for k, v in handler(self).items():
            if k == "distributions":
                out.update((m.key, v[m.key]) for m in METRICS if m.key in v)
            else:
                out[k] = v
        return out

    @classmethod
    def upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        """A summary saved by an older version, read in the current form.

        - Each distribution is under its metric's key in the file and in `distributions` here.
        - Without `tpot_n_minus_1_ms`, a summary's `tpot_ms` is the (n_out - 1) form: both names read it, and
          `tpot_definition` says so (its records give the current one).
        - A goodput above `requests_per_s` counted good requests that finished after the window, which
          `requests_per_s` leaves out (docs/metrics.md): it reads as at most `requests_per_s`, so that no report,
          cost or comparison shows goodput above throughput. That is a bound, exact when every request was good;
          the run's records give the exact figure.
        """
        good, done = d.get("goodput_rps"), d.get("requests_per_s")
        if isinstance(good, int | float) and isinstance(done, int | float) and good > done:
            d = {**d, "goodput_rps": done}
        if "tpot_n_minus_1_ms" not in d and "tpot_ms" in d:
            d = {**d, "tpot_n_minus_1_ms": d["tpot_ms"], "tpot_definition": "n_out_minus_1"}
        if "distributions" in d:
            return d
        # the file's shape: each distribution under its metric's key; a metric the file lacks (or holds as null)
        # is not recorded
        return {**{k: v for k, v in d.items() if k not in METRIC_BY_KEY},
                "distributions": {k: v for k, v in d.items() if k in METRIC_BY_KEY and v is not None}}


def _rate(count: float, window_s: float | None) -> float | None:
    return None if not window_s else count / window_s


def _distributions(ok: Sequence[RequestRecord], measured: Sequence[RequestRecord]) -> dict[str, Distribution]:
    """One distribution per registered metric (`registry.METRICS`): over the successful measured requests, or,
    for the load generator's own lag, every sent one (this measures the load generator, not the engine)."""
    return {m.key: Distribution.from_values(v for r in (measured if m.over_sent else ok) for v in m.values(r))
            for m in METRICS}


def _slo_checks(ok: Sequence[RequestRecord], slos: SLOs) -> tuple[dict[str, bool | None], dict[str, float | None]]:
    met: dict[str, bool | None] = {}
    margin: dict[str, float | None] = {}
    for short, key in SLO_METRICS:
        limit = getattr(slos, key)
        values = [v for r in ok for v in METRIC_BY_KEY[key].values(r)]
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
    good = [r for r in ok if pr.meets_slos(r, slos)]
    n_good = len(good)
    slo_met, slo_margin = _slo_checks(ok, slos)

    with_client = [r for r in ok if r.n_out_client is not None]
    dists = _distributions(ok, measured)
    signals = saturation_signals(records, measured, window)
    lag = None
    if mode == "open":
        sent = [r for r in measured if r.t_send_ns is not None]
        waits = [None if r.client_wait_ns is None else r.client_wait_ns / 1e6 for r in sent]
        lag = check_lag([pr.client_queue_ms(r) for r in sent], dists["ttft_ms"].p50, signals.arrival_rps, waits)
    return RunSummary(
        n_requests=n,
        n_ok=len(ok),
        n_errors=n - len(ok),
        error_rate=(n - len(ok)) / n if n else None,
        errors_by_kind=dict(sorted(errors.items())),
        window_s=window_s,
        mode=mode,
        offered_rps=offered_rps if mode == "open" else None,
        distributions=dists,
        requests_per_s=_rate(tp.completed_in(measured, window), window_s) if window else None,
        input_tokens_per_s=_rate(in_tok, window_s),
        output_tokens_per_s=_rate(out_tok, window_s),
        total_tokens_per_s=_rate(in_tok + out_tok, window_s),
        peak_output_tokens_per_s=tp.peak_output_tokens_per_s(records, window) if window else None,
        goodput_rps=_rate(tp.completed_in(good, window), window_s) if window else None,
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
