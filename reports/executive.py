"""The executive summary: one screen a buyer reads first.

The decision (the recommendation with its monthly cost and range, or why there is none and the
commands that would produce the missing evidence), the two runner-ups, and the risks in one line
each. Everything is picked from the recommender's output and the saved runs; the long forms
(every verdict reason, every assumption) live in the methodology section and in each ranked row's
details.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from advisor.recommend.rests_on import model_name
from advisor.saved.store import RunResult
from reports.costs import RunPrice
from reports.labels import is_valid, lag_ms, status
from reports.selection import RecommendationResult

MAX_RISKS = 6  # on the first screen; the rest behind "all risks"
LAG_WARN_MS = 5.0


def _first_sentence(text: str, limit: int = 90) -> str:
    s = text.split(": run ")[0].split("; ")[0].split(". ")[0].rstrip(".")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def money(row: dict[str, Any] | None) -> str:
    """'$1,350/month' with its range when it has one: '$1,204/month ($1,100-$1,320, 75% interval)'."""
    if not row or row.get("monthly_usd") is None:
        return "cost unknown"
    if row.get("price_from_memory"):  # the catalog's price has no citable source: never a headline figure
        return "cost not headlined (price from memory: see the warnings)"
    text = f"${row['monthly_usd']:,.0f}/month"
    rng = row.get("monthly_range")
    if rng and rng["low"] != rng["high"]:
        how = f"{rng['coverage']:.0%} interval of {rng['n']} repeats" if rng.get("coverage") else "estimate range"
        text += f" (${rng['low']:,.0f}-${rng['high']:,.0f}, {how})"
    return text


def _rows(rec: RecommendationResult) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in (rec.recommendation or {}).get("rows") or []}


def best_price(rec: RecommendationResult) -> str:
    """The price the headline's dollar figures scale with: its source and date, flagged when unverified ('')."""
    from advisor.recommend.render import price_line

    best = _rows(rec).get((rec.recommendation or {}).get("best") or "")
    if not best or best.get("price_from_memory"):
        return ""
    return price_line(best["hardware"], best.get("usd_per_hour_per_device"), best.get("price_source") or "",
                      best.get("price_as_of") or "")


def risk_lines(runs: Sequence[RunResult], prices: dict[str, RunPrice], rec: RecommendationResult) -> list[str]:
    """What a buyer should know before acting, one line each, most serious first."""
    out: list[str] = list((rec.recommendation or {}).get("warnings") or [])
    if (price := best_price(rec)).startswith("price (unverified)"):
        out.append(f"the headline's {price}")
    bad = [r for r in runs if not is_valid(r)]
    if bad:
        why = Counter(_first_sentence(str((r.verdict.reasons or ("no reason recorded",))[0]))
                      for r in bad)
        top = "; ".join(f"{k}{f' (x{n})' if n > 1 else ''}" for k, n in why.most_common(2))
        out.append(f"{len(bad)} of {len(runs)} runs are not VALID: {top}")
    rows = (rec.recommendation or {}).get("rows") or []
    est = [r for r in rows if r.get("source") == "estimated"]
    if est:
        unc = sum(1 for r in est if not r.get("headline_ok"))
        out.append(f"{len(est)} ranked options are roofline estimates, shown as ranges"
                   + (f"; {unc} rest on evidence that cannot carry a decision" if unc else ""))
    not_est = Counter(c["metric"] for r in rows if r.get("source") == "measured" for c in r.get("slo_checks") or []
                      if c.get("status") == "not established")
    if not_est:
        out.append("SLO percentiles not established by the measured requests: "
                   + ", ".join(f"{k.removesuffix('_ms').upper()} ({n} option{'s' if n > 1 else ''})"
                               for k, n in not_est.items()))
    single = sum(1 for r in rows if r.get("source") == "measured" and (r.get("repeats") or 1) == 1)
    if single and not (single == 1 and any("rests on a single run" in w for w in out)):  # the headline's, said
        out.append(f"{single} measured option{'s rest' if single > 1 else ' rests'} on a single run: "
                   "run-to-run noise unknown; repeat to get an interval")
    errs = [r for r in runs if r.summary.n_errors]
    if errs:
        out.append(f"{len(errs)} run(s) had failed requests ({sum(r.summary.n_errors for r in errs)} in all)")
    lagging = [r for r in runs if is_valid(r) and _lag(r) is not None and _lag(r) > LAG_WARN_MS]  # type: ignore[operator]
    if lagging:
        out.append(f"{len(lagging)} VALID run(s) sent requests late (p99 lag over {LAG_WARN_MS:g} ms): "
                   "latencies from t_send may understate what users see")
    if any(r.summary.token_count_mismatch or r.summary.n_out_short for r in runs):
        out.append("token counts: some requests got fewer tokens than asked, or engine and client counts differ")
    unpriced = sum(1 for p in prices.values() if p.usd_per_hour is None)
    if unpriced:
        out.append(f"no hardware price for {unpriced} run(s): their cost is not shown")
    if any(not r.telemetry.gpu for r in runs):
        out.append("energy not measured for runs without a GPU energy counter (none is estimated)")
    return out


def _lag(run: RunResult) -> float | None:
    lag = lag_ms(run)
    value = lag.at(99) if lag.at(99) is not None else lag.max
    return None if value is None else float(value)


def executive(runs: Sequence[RunResult], prices: dict[str, RunPrice], rec: RecommendationResult) -> dict[str, Any]:
    """The decision, its runner-ups and the risks, ready for the template."""
    d = rec.recommendation or {}
    rows = _rows(rec)
    best = rows.get(d.get("best") or "")
    runners = [rows[k] for k in d.get("runners_up") or [] if k in rows]
    gap = d.get("evidence")
    if best:
        kind = "recommended"
    elif gap:
        kind = "no_trust"
    else:
        kind = "none"
    risks = risk_lines(runs, prices, rec)
    return {"kind": kind, "best": best, "best_money": money(best), "best_price": best_price(rec),
            "rests_on": d.get("rests_on") or "", "runners_up": runners,
            "best_model": model_name(str(best.get("model") or "")) if best else "",
            "runner_money": [money(r) for r in runners], "evidence": gap, "reason": rec.reason,
            "advice": d.get("advice"), "closest": [rows[k] for k in (d.get("advice") or {}).get("closest") or []
                                                   if k in rows][:2],
            "design": d.get("load_basis"), "risks": risks[:MAX_RISKS], "more_risks": risks[MAX_RISKS:],
            "n_runs": len(runs), "n_valid": sum(1 for r in runs if is_valid(r)),
            "statuses": dict(Counter(status(r) for r in runs))}
