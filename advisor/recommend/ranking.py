"""Price each candidate, check it against every constraint, and rank.

Passing rows come first, cheapest first (monthly cost when a load is given, else
blended $/1M tokens), ties broken by SLO margin and then measured before estimated.
Failing rows follow, fewest failed constraints first. Every row carries why it sits
where it does and, for each failed constraint, what would have to give.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from advisor.catalog import COMPLEXITY_ORDER, Catalog
from advisor.cost import cost_per_million, monthly_cost_usd, replicas_needed
from advisor.recommend.candidates import Candidate

_SLO_NAMES = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2e_ms": "E2E"}


@dataclass(frozen=True)
class Failure:
    constraint: str  # "slo", "budget", "hardware", "vendor", "deployment", "complexity", "quality", "price", "estimates"
    detail: str
    would_have_to_give: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
    why: str

    @property
    def passes(self) -> bool:
        return not self.failures

    @property
    def key(self) -> str:
        c = self.candidate
        return f"{c.engine}@{c.hardware_id}:{c.config}:{c.source}"

    def to_dict(self) -> dict[str, Any]:
        c = self.candidate
        return {"rank": self.rank, "key": self.key, "engine": c.engine, "hardware": c.hardware_id,
                "hardware_name": self.hardware_name, "config": c.config, "model": c.model, "source": c.source,
                "run_id": c.run_id, "devices_per_replica": c.devices, "replicas": self.replicas,
                "capacity_rps_per_replica": c.capacity_rps, "usd_per_hour_per_device": self.usd_per_hour,
                "price_source": self.price_source, "monthly_usd": self.monthly_usd,
                "usd_per_1m_output": self.usd_per_1m_output, "usd_per_1m_total": self.usd_per_1m_total,
                "usd_per_1m_blended": self.usd_per_1m_blended, "latency_ms": c.latency_ms, "slos": c.slos,
                "slo_margin_ms": c.slo_margin_ms, "complexity": self.complexity,
                "complexity_reason": self.complexity_reason, "quality_drift": self.quality_drift,
                "passes": self.passes, "failures": [f.to_dict() for f in self.failures], "why": self.why,
                "assumptions": list(c.assumptions)}


def _slo_failures(c: Candidate, pct: float) -> list[Failure]:
    out = []
    for k, lim in c.slos.items():
        v = c.latency_ms.get(k)
        if lim is None:
            continue
        name = f"p{pct:g} {_SLO_NAMES[k]}"
        if v is None:
            out.append(Failure("slo", f"{name} not measured (too few requests for p{pct:g})",
                               "run more requests so the percentile exists"))
        elif v > lim:
            out.append(Failure("slo", f"{name} {v:.0f} ms > {lim:.0f} ms limit",
                               f"relax {name} to {math.ceil(v)} ms"))
    if c.capacity_rps is None and not out:
        out.append(Failure("slo", "no measured rate met every SLO", "sweep lower rates or relax the SLOs"))
    return out


def evaluate(c: Candidate, cons: Any, catalog: Catalog, design_rps: float | None,
             quality: dict[str, float]) -> Row:
    """One unranked row (rank 0): costs, failures; `quality` maps engine or engine/precision to drift."""
    hw = catalog.hardware.get(c.hardware_id)
    fails: list[Failure] = _slo_failures(c, cons.percentile)
    price = catalog.price(c.hardware_id, cons.tier) if hw else None
    if price is None:
        fails.append(Failure("price", f"no {cons.tier} price for {c.hardware_id}",
                             f"pass --price {c.hardware_id}=USD_PER_HOUR or a --prices file"))
    if cons.hardware and c.hardware_id not in cons.hardware:
        fails.append(Failure("hardware", f"{c.hardware_id} is not in the allowed hardware",
                             f"allow {c.hardware_id}"))
    if cons.cpu_only and (hw is None or hw.kind != "cpu"):
        fails.append(Failure("hardware", f"{c.hardware_id} is a GPU and only CPUs are allowed", "allow GPUs"))
    if cons.vendors and (hw is None or hw.vendor not in cons.vendors):
        fails.append(Failure("vendor", f"vendor {hw.vendor if hw else 'unknown'} not allowed",
                             f"allow vendor {hw.vendor if hw else 'unknown'}"))
    if cons.deployment != "any" and (hw is None or cons.deployment not in hw.deployments):
        fails.append(Failure("deployment", f"{c.hardware_id} is not offered for {cons.deployment}",
                             f"deploy {'/'.join(hw.deployments) if hw else 'elsewhere'} instead"))
    if cons.deployment == "edge" and c.devices > 1:
        fails.append(Failure("deployment", f"needs {c.devices} devices per replica at the edge", "use a smaller model"))
    ops = catalog.engine_ops(c.engine)
    if ops and COMPLEXITY_ORDER[ops.complexity] > COMPLEXITY_ORDER[cons.max_complexity]:
        fails.append(Failure("complexity", f"{c.engine} operations rated {ops.complexity} ({ops.reason})",
                             f"accept {ops.complexity} operational complexity"))
    drift = quality.get(f"{c.engine}/{c.precision}", quality.get(c.engine))
    if cons.max_quality_drift is not None and drift is not None and drift > cons.max_quality_drift:
        fails.append(Failure("quality", f"quality drift {drift:.1%} > {cons.max_quality_drift:.1%}",
                             f"accept {drift:.1%} drift or use a higher precision"))
    if c.source == "estimated" and not cons.include_estimates:
        fails.append(Failure("estimates", "estimated, not measured", "measure it, or allow estimates"))
    replicas = monthly = out1m = tot1m = blend1m = None
    if price is not None and c.capacity_rps:
        replicas = replicas_needed(design_rps, c.capacity_rps, cons.headroom) if design_rps else 1
        monthly = monthly_cost_usd(price.usd_per_hour, c.devices, replicas)
        cpm = cost_per_million(price.usd_per_hour, c.devices, c.capacity_rps * c.input_tokens_per_request,
                               c.capacity_rps * c.output_tokens_per_request)
        out1m, tot1m, blend1m = cpm.output_usd, cpm.total_usd, cpm.blended_usd
        if cons.budget_usd_month is not None and monthly > cons.budget_usd_month:
            fails.append(Failure("budget", f"${monthly:,.0f}/month > ${cons.budget_usd_month:,.0f} budget",
                                 f"raise the budget to ${math.ceil(monthly):,}/month"))
    return Row(0, c, hw.name if hw else c.hardware_id, price.usd_per_hour if price else None,
               price.source if price else "no price", replicas, monthly, out1m, tot1m, blend1m,
               ops.complexity if ops else None, ops.reason if ops else "engine not rated in the catalog",
               drift, tuple(fails), "")


def _sort_key(r: Row, by_monthly: bool) -> tuple[Any, ...]:
    cost = (r.monthly_usd if by_monthly else r.usd_per_1m_blended)
    margin = r.candidate.min_margin_frac
    return (not r.passes, len(r.failures), cost if cost is not None else math.inf,
            -(margin if margin is not None else -math.inf), r.candidate.source != "measured", r.key)


def _money(r: Row, by_monthly: bool) -> str:
    if by_monthly:
        return f"${r.monthly_usd:,.0f}/month" if r.monthly_usd is not None else "cost unknown"
    return f"${r.usd_per_1m_blended:.3g} per 1M blended tokens" if r.usd_per_1m_blended is not None else "cost unknown"


def rank(rows: list[Row], by_monthly: bool) -> list[Row]:
    """Sort and write each row's rank and why."""
    ordered = sorted(rows, key=lambda r: _sort_key(r, by_monthly))
    first_pass = next((r for r in ordered if r.passes), None)
    out = []
    for i, r in enumerate(ordered, start=1):
        m = r.candidate.min_margin_frac
        margin = f", tightest SLO margin {m:.0%}" if m is not None else ""
        label = "measured" if r.candidate.source == "measured" else "estimated (roofline)"
        if r.passes:
            if r is first_pass:
                why = f"meets every constraint at the lowest cost: {_money(r, by_monthly)}{margin}; {label}"
            else:
                why = f"meets every constraint; {_money(r, by_monthly)}, more than rank {first_pass.rank if first_pass else 1}{margin}; {label}"
        else:
            why = (f"fails {len(r.failures)} constraint(s): " + "; ".join(f.detail for f in r.failures)
                   + f" ({_money(r, by_monthly)}; {label})")
        nr = replace(r, rank=i, why=why)
        if r is first_pass:
            first_pass = nr
        out.append(nr)
    return out
