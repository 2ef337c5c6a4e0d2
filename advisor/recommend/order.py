"""The order of the ranked rows, ties between options whose cost ranges overlap, and one short reason per row.

Rows that pass every constraint on evidence that can carry a recommendation come first, cheapest
first (monthly cost when a load is given, else blended $/1M). Among them, options whose cost ranges
overlap (the repeats' intervals of measured options, the error ranges of estimates) are a tie: the
difference is not established, so they are said to be tied and ordered by the user's secondary
criteria (`tie_break`: operational complexity, then tightest SLO margin), then by cost. Rows that
pass only on evidence that cannot carry a headline (runs that are not VALID, estimates uncalibrated
for their device class) follow, then failing rows, fewest failures first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from advisor.catalog import COMPLEXITY_ORDER
from advisor.metrics.intervals import Interval
from advisor.recommend.bound import HOST_PATH
from advisor.recommend.ranking import Row


def cost(r: Row, by_monthly: bool) -> float | None:
    return r.monthly_usd if by_monthly else r.usd_per_1m_blended


def cost_range(r: Row, by_monthly: bool) -> Interval | None:
    rng = r.monthly_range if by_monthly else r.blended_range
    if rng is not None:
        return rng
    c = cost(r, by_monthly)
    return None if c is None else Interval.point(c)


def _sort_key(r: Row, by_monthly: bool) -> tuple[Any, ...]:
    c = cost(r, by_monthly)
    margin = r.candidate.min_margin_frac
    return (not r.passes, r.passes and not r.headline_ok, len(r.failures), c if c is not None else math.inf,
            -(margin if margin is not None else -math.inf), r.candidate.source != "measured", r.key)


def _criterion(r: Row, name: str) -> float:
    if name == "complexity":
        return float(COMPLEXITY_ORDER.get(r.complexity or "", len(COMPLEXITY_ORDER)))
    if r.candidate.sized_to_limit:  # its margin is the capacity search's rounding, not a property of the option
        return 0.0
    m = r.candidate.min_margin_frac
    return -(m if m is not None else -math.inf)  # larger margin first


def _tie_groups(contenders: list[Row], by_monthly: bool) -> list[list[Row]]:
    """Each group: the cheapest remaining row and every other row whose cost range overlaps its range."""
    left, groups = list(contenders), []
    while left:
        anchor, rest = left[0], left[1:]
        a = cost_range(anchor, by_monthly)
        group = [anchor] + [r for r in rest if a is not None and (b := cost_range(r, by_monthly)) is not None
                            and a.overlaps(b)]
        groups.append(group)
        left = [r for r in left if all(r is not g for g in group)]
    return groups


def _money(r: Row, by_monthly: bool) -> str:
    if r.price_from_memory:  # never a headline figure: the warning says so and names --price
        return "cost not stated (the catalog's price is from memory)"
    rng = cost_range(r, by_monthly)
    if by_monthly:
        if r.monthly_usd is None:
            return "cost unknown"
        text = f"${r.monthly_usd:,.0f}/month"
        return text + (f" (${rng.low:,.0f}-${rng.high:,.0f})" if rng is not None and rng.low != rng.high else "")
    if r.usd_per_1m_blended is None:
        return "cost unknown"
    text = f"${r.usd_per_1m_blended:.3g} per 1M blended tokens"
    return text + (f" (${rng.low:.3g}-${rng.high:.3g})" if rng is not None and rng.low != rng.high else "")


def _label(r: Row) -> str:
    c = r.candidate
    if c.source == "measured":
        host = f", host-bound: {HOST_PATH}" if c.bound == "host-bound" else ""
        return (f"measured ({c.repeats} repeats{host})" if c.repeats > 1 else f"measured (1 run{host})")
    return f"estimated, {c.evidence}"


def _decider(a: Row, b: Row, tie_break: Sequence[str]) -> str:
    """Which secondary criterion put `a` before `b`, in words."""
    for name in tie_break:
        if _criterion(a, name) != _criterion(b, name):
            if name == "complexity":
                return f"lower operational complexity ({a.complexity or 'unrated'} vs {b.complexity or 'unrated'})"
            ma, mb = a.candidate.min_margin_frac, b.candidate.min_margin_frac
            return f"larger SLO margin ({'-' if ma is None else f'{ma:.0%}'} vs {'-' if mb is None else f'{mb:.0%}'})"
    return "lower central cost"


def _ranks(ranks: list[int], shown: int = 4) -> str:
    """'#2, #3, #4' or '#2, #3, #4, #5 and 14 more': a long tie in a line that can be read."""
    text = ", ".join(f"#{n}" for n in ranks[:shown])
    return text + (f" and {len(ranks) - shown} more" if len(ranks) > shown else "")


def _part(r: Row, measured_first: bool) -> tuple[bool, bool]:
    """Which part of the contenders a row is in: estimated (with `measured_first`), then priced from memory."""
    return (measured_first and r.candidate.source != "measured", r.price_from_memory)


def _after(r: Row, measured_first: bool) -> str:
    """Why the first row of a later part comes after the rows before it, whatever their cost."""
    why = []
    if measured_first and r.candidate.source != "measured":
        why.append("after the measured rows of this model (an estimate is not better established)")
    if r.price_from_memory:
        why.append("after the options whose price has a cited source (its price is from memory)")
    return ", ".join(why)


def rank(rows: list[Row], by_monthly: bool, tie_break: Sequence[str] = ("complexity", "margin"),
         measured_first: bool = False) -> list[Row]:
    """Sort, resolve ties among the contenders, and write each row's rank, one short reason and its details.

    `measured_first` (a model config's rows): measured rows come before estimated ones among the contenders and
    among the others, and never tie with them: an estimate is not better established than a measurement.
    Likewise rows whose price is from memory (no citable source) come after the rows with a cited price and never
    tie with them: a price nobody can check does not choose the headline while a checked one can."""
    ordered = sorted(rows, key=lambda r: _sort_key(r, by_monthly))
    ordered.sort(key=lambda r: _part(r, measured_first))  # stable: each part keeps its order
    contenders = [r for r in ordered if r.passes and r.headline_ok]
    others = [r for r in ordered if not (r.passes and r.headline_ok)]
    parts = [[r for r in contenders if _part(r, measured_first) == p]
             for p in sorted({_part(r, measured_first) for r in contenders})]
    resolved: list[tuple[Row, list[Row]]] = []
    heads: list[Row] = []  # measured_first: the first row of each part once its ties are resolved
    for part in parts:
        for group in _tie_groups(part, by_monthly):
            group.sort(key=lambda r: (*(_criterion(r, n) for n in tie_break), _sort_key(r, by_monthly)))
            resolved.extend((r, group) for r in group)
        if part:
            heads.append(next(r for r, _ in resolved if r in part))
    out: list[Row] = []
    rank_of = {id(r): i for i, r in enumerate([r for r, _ in resolved] + others, start=1)}
    first = resolved[0][0] if resolved else None
    for r, group in resolved:
        tied = tuple(x.key for x in group if x is not r)
        tied_ranks = _ranks([rank_of[id(x)] for x in group if x is not r])
        head = next((h for h in reversed(heads) if rank_of[id(h)] <= rank_of[id(r)]), first)
        if r is not first and r is head:
            also = f"; tied on cost with {tied_ranks} (ranges overlap)" if tied else ""
            what = "estimate" if measured_first and r.candidate.source != "measured" else "option"
            why = (f"the cheapest {what} meeting every constraint, {_after(r, measured_first)}{also}: "
                   f"{_money(r, by_monthly)}; {_label(r)}")
        elif r is first:
            why = f"cheapest option meeting every constraint: {_money(r, by_monthly)}; {_label(r)}"
            before = [text for cond, text in (
                (any(_part(h, measured_first)[0] for h in heads), "measured: listed before the estimates of this "
                                                                  "model whatever their cost"),
                (any(h.price_from_memory for h in heads) and not r.price_from_memory,
                 "its price has a cited source: listed before the options priced from memory whatever their cost"))
                if cond]
            if before:
                why = f"meets every constraint, {'; '.join(before)}: {_money(r, by_monthly)}; {_label(r)}"
            if tied:
                why = (f"tied on cost with {tied_ranks} (ranges overlap), first on "
                       f"{_decider(r, group[1], tie_break)}: {_money(r, by_monthly)}; {_label(r)}")
        elif tied and group[0] is not r:
            why = (f"tied on cost with {tied_ranks} (ranges overlap), after #{rank_of[id(group[0])]} on "
                   f"{_decider(group[0], r, tie_break)}: {_money(r, by_monthly)}; {_label(r)}")
        else:
            why = (f"meets every constraint at a higher cost than #{rank_of[id(head)] if head else 1}: "
                   f"{_money(r, by_monthly)}; {_label(r)}")
        out.append(_finish(r, rank_of[id(r)], why, tied))
    for r in others:
        if r.passes:
            why = f"passes on paper, but {r.candidate.evidence_note}: not a recommendation ({_money(r, by_monthly)})"
        else:
            f = r.failures[0]
            more = f" (+{len(r.failures) - 1} more)" if len(r.failures) > 1 else ""
            why = f"fails {f.constraint}: {f.detail}{more}"
        out.append(_finish(r, rank_of[id(r)], why, ()))
    return out


def _finish(r: Row, rank_no: int, why: str, tied: tuple[str, ...]) -> Row:
    c = r.candidate
    details = [f"evidence: {c.evidence_note}" if c.evidence_note else f"evidence: {c.evidence}"]
    details += [f"fails {f.constraint}: {f.detail}; to pass: {f.would_have_to_give}" for f in r.failures]
    if c.capacity_range is not None and not c.capacity_range.is_point:
        details.append(f"capacity per replica {c.capacity_range.text()} req/s: {c.capacity_range.method}")
    for k, rng in c.latency_range_ms.items():
        if not rng.is_point and c.slos.get(k) is not None:
            details.append(f"{k}: {rng.text('{:.0f}')} ms vs limit {c.slos[k]:g} ms")
    if r.complexity:
        details.append(f"operational complexity {r.complexity}: {r.complexity_reason}")
    return replace(r, rank=rank_no, why=why, tied_with=tied, details=tuple(details))
