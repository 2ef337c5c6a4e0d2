"""When nothing meets every constraint: the closest options and what would have to give.

Closest = fewest failed constraints, then cheapest. For each kind of constraint the
smallest change that would let some option pass on that constraint alone is reported
(e.g. the lowest budget among options that fail only on budget).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from advisor.recommend.ranking import Row
from fileform import FileForm


@dataclass(frozen=True)
class Advice(FileForm):
    closest: tuple[str, ...]  # row keys
    would_have_to_give: tuple[str, ...]  # one line per relaxation, smallest first within its kind


def _number(s: str) -> float:
    m = re.search(r"([\d,]+(?:\.\d+)?)", s)
    return float(m.group(1).replace(",", "")) if m else math.inf


def advise(rows: list[Row], n: int = 3) -> Advice | None:
    """None when some row passes; else the `n` closest rows and the single-constraint relaxations."""
    if any(r.passes and r.headline_ok for r in rows):
        return None
    closest = sorted(rows, key=lambda r: (len(r.failures), r.monthly_usd if r.monthly_usd is not None else math.inf))[:n]
    give: dict[str, tuple[float, str]] = {}
    for r in rows:
        if len(r.failures) == 1:
            f = r.failures[0]
            kind = f.constraint + ":" + (f.detail.split(" ")[1] if f.constraint == "slo" else "")
            cost = _number(f.would_have_to_give)
            line = f"{f.would_have_to_give} (then {r.key} passes)"
            if kind not in give or cost < give[kind][0]:
                give[kind] = (cost, line)
    if not give and closest:
        needs = dict.fromkeys(f.would_have_to_give for f in closest[0].failures)  # ordered, no repeats
        give["_"] = (0.0, "no single change suffices; the closest option needs: " + "; ".join(needs))
    return Advice(tuple(r.key for r in closest), tuple(v[1] for v in sorted(give.values(), key=lambda x: x[1])))
