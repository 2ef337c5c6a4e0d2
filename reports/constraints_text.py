"""The constraints a recommendation was made under, in words a buyer reads.

"p95 TTFT <= 2,000 ms, p95 TPOT <= 100 ms, peak 20 req/s, budget $20,000/month", then only the settings
that differ from their defaults. The SLOs stated are the ones applied: a limit given in the constraints,
else each ranked option's scenario SLO (the recommender's `Constraints.slos_for`), read off the
recommendation's rows; so a limit that came from the scenario is named as such.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SLO_NAMES = (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("e2e_ms", "E2E"))
_DEFAULT_TIE_BREAK = ["complexity", "margin"]


def _ms(value: float) -> str:
    return f"{value:,.0f} ms" if value >= 10 else f"{value:g} ms"


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:g}"


def slo_phrases(constraints: Mapping[str, Any], row_slos: Sequence[Mapping[str, Any]]) -> list[str]:
    """'p95 TTFT <= 2,000 ms' per SLO applied; a limit that came from the scenario, not the constraints, says so."""
    pct = f"p{float(constraints.get('percentile') or 95.0):g}"
    phrases: list[tuple[str, bool]] = []  # (text, came from a scenario and does not say so yet)
    for key, name in SLO_NAMES:
        given = constraints.get(key)
        values = [float(given)] if given is not None else sorted(
            {float(v) for s in row_slos if (v := s.get(key)) is not None})
        if len(values) == 1:
            phrases.append((f"{pct} {name} <= {_ms(values[0])}", given is None))
        elif values:  # runs made under different limits: each option is held to its own runs'
            phrases.append((f"{pct} {name} <= {' or '.join(_ms(v) for v in values)}, each option by its runs' SLOs",
                            False))
    unsaid = [scenario for _, scenario in phrases]
    if len(phrases) > 1 and all(unsaid):
        return [t for t, _ in phrases[:-1]] + [phrases[-1][0] + " (the scenario's SLOs)"]
    return [t + (" (the scenario's)" if scenario else "") for t, scenario in phrases]


def constraints_text(constraints: Mapping[str, Any], row_slos: Sequence[Mapping[str, Any]] = ()) -> str:
    """The constraints as one or two sentences; `row_slos`: the `slos` of the recommendation's rows."""
    c = constraints
    head = slo_phrases(c, row_slos) or ["no latency SLO"]
    if c.get("peak_rps"):
        head.append(f"peak {_number(float(c['peak_rps']))} req/s")
    if c.get("avg_rps"):
        head.append(f"average {_number(float(c['avg_rps']))} req/s")
    if c.get("monthly_tokens_m"):
        head.append(f"{_number(float(c['monthly_tokens_m']))}M tokens/month")
    if not (c.get("peak_rps") or c.get("avg_rps") or c.get("monthly_tokens_m")):
        head.append("no load given (one replica)")
    head.append(f"budget ${float(c['budget_usd_month']):,.0f}/month" if c.get("budget_usd_month") else "no budget")
    return ", ".join(head) + "." + ("" if not (more := _other_phrases(c)) else " Also: " + "; ".join(more) + ".")


def _other_phrases(c: Mapping[str, Any]) -> list[str]:
    """The remaining constraints, each only where it is not its default (headroom always: it sizes the fleet)."""
    out = []
    if c.get("scenario"):
        out.append(f"scenario {c['scenario']}")
    if c.get("hardware"):
        out.append(f"hardware limited to {', '.join(map(str, c['hardware']))}")
    if c.get("vendors"):
        out.append(f"vendors limited to {', '.join(map(str, c['vendors']))}")
    if c.get("deployment") not in (None, "any"):
        out.append(f"{c['deployment']} deployment")
    if c.get("cpu_only"):
        out.append("CPU only (no GPU)")
    if c.get("max_quality_drift") is not None:
        out.append(f"quality drift at most {float(c['max_quality_drift']):.1%}")
    if c.get("max_complexity") not in (None, "high"):
        out.append(f"operational complexity at most {c['max_complexity']}")
    if c.get("headroom") is not None:
        out.append(f"{float(c['headroom']):.0%} headroom over the load")
    if c.get("price_tier"):
        out.append("owned-hardware prices (TCO)" if c["price_tier"] == "owned_tco" else "cloud on-demand prices")
    if c.get("include_estimates") is False:
        out.append("measured options only (no estimates)")
    if c.get("allow_uncalibrated"):
        out.append("uncalibrated estimates may carry the headline")
    tie = list(c.get("tie_break") or _DEFAULT_TIE_BREAK)
    if tie != _DEFAULT_TIE_BREAK:
        out.append(f"ties broken by {', then '.join(tie)}")
    return out
