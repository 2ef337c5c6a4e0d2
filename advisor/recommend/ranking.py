"""Price each candidate and check it against every constraint (the order is `order.py`'s).

A measured row's SLOs are judged by the early-stopping rule (met, failed, or not established:
never counted as met); an estimated row passes an SLO only when the high end of its error range
does, and a budget only when the high end of its cost range does. Every failure says what would
have to give. Costs carry a range where the capacity has one (repeats' interval, estimate range).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from advisor.catalog import COMPLEXITY_ORDER, Catalog
from advisor.catalog.cost import cost_per_million, monthly_cost_usd, replicas_needed
from advisor.metrics.decided import decided
from advisor.metrics.intervals import Interval
from advisor.recommend.candidates import Candidate
from fileform import FileForm

_SLO_NAMES = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2e_ms": "E2E"}


@dataclass(frozen=True)
class Failure(FileForm):
    constraint: str  # "slo", "errors" (an SLO failed by failed requests), "evidence", "budget", "hardware", "vendor", "deployment", "complexity", "quality", "price", "estimates"
    detail: str
    would_have_to_give: str
    relaxed: dict[str, Any] = field(default_factory=dict)  # constraint values that lift this failure; {}: measure


@dataclass(frozen=True)
class Row:
    rank: int
    candidate: Candidate
    hardware_name: str
    usd_per_hour: float | None  # per device
    price_source: str
    replicas: int | None
    monthly_usd: float | None
    usd_per_1m_output: float | None  # at the SLO operating point (capacity), per replica
    usd_per_1m_total: float | None
    usd_per_1m_blended: float | None
    complexity: str | None
    complexity_reason: str
    quality_drift: float | None
    failures: tuple[Failure, ...]
    why: str  # one short reason for its place
    monthly_range: Interval | None = None  # from the capacity's interval or error range
    blended_range: Interval | None = None
    headline_ok: bool = True  # its evidence may carry a headline recommendation
    tied_with: tuple[str, ...] = ()  # keys of the rows its cost range overlaps (a tie, broken by tie_break)
    details: tuple[str, ...] = field(default=())  # the longer story: failures, ranges, evidence, tie
    price_as_of: str = ""  # the price's date as its source gives it ("user" for an override; "" without a price)
    price_from_memory: bool = False  # the catalog's price has no citable source: ranked with, never headlined

    @property
    def passes(self) -> bool:
        return not self.failures

    @property
    def source_code(self) -> str:
        """The table's marker: meas / est, with "?" when its evidence cannot carry a recommendation."""
        return ("meas" if self.candidate.source == "measured" else "est") + ("" if self.headline_ok else "?")

    @property
    def key(self) -> str:
        """Unique per row: engine, hardware, config, model (its folder name) and source."""
        c = self.candidate
        model = c.model.rstrip("/").rsplit("/", 1)[-1]
        return f"{c.engine}@{c.hardware_id}:{c.config}:{model}:{c.source}"

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (JSON built from properties, never read back)
        c = self.candidate
        return {"rank": self.rank, "key": self.key, "engine": c.engine, "hardware": c.hardware_id,
                "hardware_name": self.hardware_name, "config": c.config, "model": c.model, "source": c.source,
                "run_id": c.run_id, "devices_per_replica": c.devices, "replicas": self.replicas,
                "capacity_rps_per_replica": c.capacity_rps, "usd_per_hour_per_device": self.usd_per_hour,
                "price_source": self.price_source, "price_as_of": self.price_as_of,
                "price_from_memory": self.price_from_memory, "monthly_usd": self.monthly_usd,
                "usd_per_1m_output": self.usd_per_1m_output, "usd_per_1m_total": self.usd_per_1m_total,
                "usd_per_1m_blended": self.usd_per_1m_blended, "latency_ms": c.latency_ms, "slos": c.slos,
                "slo_margin_ms": c.slo_margin_ms, "complexity": self.complexity,
                "complexity_reason": self.complexity_reason, "quality_drift": self.quality_drift,
                "passes": self.passes, "failures": [f.to_dict() for f in self.failures], "why": self.why,
                "assumptions": list(c.assumptions), "evidence": c.evidence, "evidence_class": c.evidence_class,
                "evidence_note": c.evidence_note,
                "headline_ok": self.headline_ok, "repeats": c.repeats, "group_id": c.group_id,
                "capacity_range": c.capacity_range.to_dict() if c.capacity_range else None,
                "latency_range_ms": {k: v.to_dict() for k, v in c.latency_range_ms.items()},
                "slo_checks": list(c.slo_checks),
                "monthly_range": self.monthly_range.to_dict() if self.monthly_range else None,
                "blended_range": self.blended_range.to_dict() if self.blended_range else None,
                "tied_with": list(self.tied_with), "details": list(self.details)}


def _finite(v: float | None) -> float | None:
    """`v` where it is a number a limit can be raised to (None: absent, infinite or NaN, so nothing to ceil)."""
    return v if v is not None and math.isfinite(v) else None


def _slo_failures(c: Candidate, pct: float) -> list[Failure]:
    out = []
    if c.source == "measured":
        for ch in c.slo_checks:
            name = f"p{pct:g} {_SLO_NAMES[ch['metric']]}"
            if ch["status"] == "failed" and ch.get("failed_by_errors"):
                # a failed request is over every limit: no relaxation helps, only requests that do not fail
                out.append(Failure("errors", f"{name}: {ch['n_failed']} of {ch['n']} requests failed, and a failed "
                                   "request counts as over any limit",
                                   "fix what made the requests fail (the run's verdict names the error kinds) and "
                                   "measure again; no latency limit lifts this"))
            elif ch["status"] == "failed":
                seen = _finite(ch["observed_ms"])
                seen = seen if seen is not None and seen > ch["limit_ms"] else None  # never 'relax' to a tighter limit
                shown, lim_shown = decided(seen, ch["limit_ms"]) if seen is not None else ("", f"{ch['limit_ms']:g}")
                value = f"{shown} ms" if seen is not None else f"{ch['n_over']} of {ch['n']} requests over"
                out.append(Failure("slo", f"{name} {value} > {lim_shown} ms limit",
                                   f"relax {name} to {math.ceil(seen)} ms" if seen is not None
                                   else "measure a lower rate or relax the SLO",
                                   {ch["metric"]: math.ceil(seen)} if seen is not None else {}))
            elif ch["status"] == "not established":
                out.append(Failure("slo", ch["text"], f"measure at least {ch['more_needed']} more requests "
                                   "(see the commands that would establish it)"))
        if c.evidence == "invalid":
            out.append(Failure("evidence", c.evidence_note, "re-run it so its verdict is VALID"))
        if c.capacity_rps is None and not out:
            out.append(Failure("slo", "no measured rate met every SLO", "sweep lower rates or relax the SLOs"))
        return out
    for k, lim in c.slos.items():
        if lim is None:
            continue
        v, hi = _finite(c.latency_ms.get(k)), _finite(c.pessimistic_ms(k))
        name = f"p{pct:g} {_SLO_NAMES[k]}"
        if v is None or hi is None:
            out.append(Failure("slo", f"{name} not estimated (absent or unbounded)", "measure it"))
        elif hi > lim:
            hi_shown, lim_shown = decided(hi, lim)
            what = f"up to {hi_shown} ms (estimate {decided(v, lim)[0]} ms)" if hi != v else f"{hi_shown} ms"
            out.append(Failure("slo", f"{name} {what} > {lim_shown} ms limit",
                               f"relax {name} to {math.ceil(hi)} ms, or measure it", {k: math.ceil(hi)}))
    if c.capacity_rps is None and not out:
        out.append(Failure("slo", "no batch size meets every SLO at the pessimistic end", "relax the SLOs"))
    return out


def _monthly(price_usd_h: float, c: Candidate, cap: float, design_rps: float | None, headroom: float) -> float:
    replicas = replicas_needed(design_rps, cap, headroom) if design_rps else 1
    return monthly_cost_usd(price_usd_h, c.devices, replicas)


def _blended(price_usd_h: float, c: Candidate, cap: float) -> float | None:
    return cost_per_million(price_usd_h, c.devices, cap * c.input_tokens_per_request,
                            cap * c.output_tokens_per_request).blended_usd


def evaluate(c: Candidate, cons: Any, catalog: Catalog, design_rps: float | None,
             quality: dict[str, float]) -> Row:
    """One unranked row (rank 0): costs with their ranges, failures; `quality` maps engine[/precision] to drift."""
    hw = catalog.hardware.get(c.hardware_id)
    fails: list[Failure] = _slo_failures(c, cons.percentile)
    price = catalog.price(c.hardware_id, cons.tier) if hw else None
    if c.hardware_problem:
        fails.append(Failure("hardware", c.hardware_problem,
                             "re-run with --server-hardware ID naming the server's hardware (`advisor hardware` lists "
                             "the ids)"))
    elif price is None and hw is not None and hw.unlisted:
        fails.append(Failure("price", f"{hw.name}: not in the catalog, so no price",
                             f"add {hw.id} with its price under `hardware:` in a --prices file"))
    elif price is None:
        fails.append(Failure("price", f"no {cons.tier} price for {c.hardware_id}",
                             f"pass --price {c.hardware_id}=USD_PER_HOUR or a --prices file"))
    if cons.hardware and c.hardware_id not in cons.hardware:
        fails.append(Failure("hardware", f"{c.hardware_id} is not in the allowed hardware",
                             f"allow {c.hardware_id}", {"hardware": (*cons.hardware, c.hardware_id)}))
    if cons.cpu_only and (hw is None or hw.kind != "cpu"):
        fails.append(Failure("hardware", f"{c.hardware_id} is a GPU and only CPUs are allowed", "allow GPUs",
                             {"cpu_only": False}))
    if cons.vendors and (hw is None or hw.vendor not in cons.vendors):
        fails.append(Failure("vendor", f"vendor {hw.vendor if hw else 'unknown'} not allowed",
                             f"allow vendor {hw.vendor if hw else 'unknown'}",
                             {"vendors": (*cons.vendors, hw.vendor)} if hw else {}))
    if cons.deployment != "any" and (hw is None or cons.deployment not in hw.deployments):
        fails.append(Failure("deployment", f"{c.hardware_id} is not offered for {cons.deployment}",
                             f"deploy {'/'.join(hw.deployments) if hw else 'elsewhere'} instead",
                             {"deployment": hw.deployments[0]} if hw and hw.deployments else {}))
    if cons.deployment == "edge" and c.devices > 1:
        fails.append(Failure("deployment", f"needs {c.devices} devices per replica at the edge", "use a smaller model"))
    ops = catalog.engine_ops(c.engine)
    if ops and COMPLEXITY_ORDER[ops.complexity] > COMPLEXITY_ORDER[cons.max_complexity]:
        fails.append(Failure("complexity", f"{c.engine} operations rated {ops.complexity} ({ops.reason})",
                             f"accept {ops.complexity} operational complexity", {"max_complexity": ops.complexity}))
    drift = quality.get(f"{c.engine}/{c.precision}", quality.get(c.engine))
    if cons.max_quality_drift is not None and drift is not None and drift > cons.max_quality_drift:
        fails.append(Failure("quality", f"quality drift {drift:.1%} > {cons.max_quality_drift:.1%}",
                             f"accept {drift:.1%} drift or use a higher precision", {"max_quality_drift": drift}))
    if c.source == "estimated" and not cons.include_estimates:
        fails.append(Failure("estimates", "estimated, not measured", "measure it, or allow estimates",
                             {"include_estimates": True}))
    replicas = monthly = out1m = tot1m = blend1m = None
    monthly_rng = blend_rng = None
    if price is not None and c.capacity_rps:
        p = price.usd_per_hour
        replicas = replicas_needed(design_rps, c.capacity_rps, cons.headroom) if design_rps else 1
        monthly = monthly_cost_usd(p, c.devices, replicas)
        cpm = cost_per_million(p, c.devices, c.capacity_rps * c.input_tokens_per_request,
                               c.capacity_rps * c.output_tokens_per_request)
        out1m, tot1m, blend1m = cpm.output_usd, cpm.total_usd, cpm.blended_usd
        if c.capacity_range is not None and c.capacity_range.low > 0:
            monthly_rng = c.capacity_range.map(lambda cap: _monthly(p, c, cap, design_rps, cons.headroom),
                                               decreasing=True)
            if blend1m is not None:
                blend_rng = c.capacity_range.map(lambda cap: _blended(p, c, cap) or 0.0, decreasing=True)
        worst = monthly_rng.high if monthly_rng is not None and c.source == "estimated" else monthly
        if cons.budget_usd_month is not None and not math.isfinite(worst):
            fails.append(Failure("budget", "monthly cost unbounded (no finite capacity)", "measure it"))
        elif cons.budget_usd_month is not None and worst > cons.budget_usd_month:
            what = f"up to ${worst:,.0f}/month" if worst != monthly else f"${monthly:,.0f}/month"
            fails.append(Failure("budget", f"{what} > ${cons.budget_usd_month:,.0f} budget",
                                 f"raise the budget to ${math.ceil(worst):,}/month",
                                 {"budget_usd_month": math.ceil(worst)}))
    headline_ok = c.headline_ok or (cons.allow_uncalibrated and c.evidence == "uncalibrated")
    return Row(0, c, hw.name if hw else c.hardware_id, price.usd_per_hour if price else None,
               price.source if price else "no price", replicas, monthly, out1m, tot1m, blend1m,
               ops.complexity if ops else None, ops.reason if ops else "engine not rated in the catalog",
               drift, tuple(fails), "", monthly_rng, blend_rng, headline_ok, price_as_of=price.as_of if price else "",
               price_from_memory=price.from_memory if price else False)
