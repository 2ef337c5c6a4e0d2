"""When nothing meets every constraint: the closest options and what would have to give.

Closest = fewest failed constraints, then cheapest. For each kind of constraint the smallest change
that would let some option pass is reported, and only after that option was re-checked under the
changed constraint with every other constraint too (a row that fails an SLO has no cost, so its
budget was never checked): the line then says whether it passes, passes only on evidence that
cannot carry a recommendation (an uncalibrated estimate), or what it would still fail. A fix that
needs a measurement, not a setting, cannot be re-checked, and its line says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.recommend.constraints import Constraints
from advisor.recommend.ranking import Failure, Row
from fileform import FileForm

Recheck = Callable[[Constraints], list[Row]]  # every row, re-evaluated under other constraints
MAX_RECHECKS = 3  # relaxations re-checked per kind of constraint, smallest first (each re-evaluates every option)


@dataclass(frozen=True)
class Advice(FileForm):
    closest: tuple[str, ...]  # row keys
    would_have_to_give: tuple[str, ...]  # one line per relaxation, smallest first within its kind


def _size(f: Failure) -> float:
    """How big the change is, to pick the smallest within a kind (a limit, a budget; 0 for yes/no changes)."""
    return next((float(v) for v in f.relaxed.values() if isinstance(v, int | float) and not isinstance(v, bool)), 0.0)


def not_recommendable(r: Row) -> str:
    """Why a row's evidence cannot carry a recommendation, in a few words."""
    c = r.candidate
    if c.source == "measured":
        return "it was measured only in runs that are not VALID"
    if not c.tested_there:
        return "it is an estimate on hardware where the engine was never run"
    return f"it is an {c.evidence} estimate"


def outcome(key: str, relaxed: dict[str, Any], cons: Constraints, recheck: Recheck) -> tuple[int, str]:
    """Re-check row `key` under `relaxed`: (0 passes, 1 passes but cannot headline, 2 still fails), and the words."""
    after = next((r for r in recheck(cons.model_copy(update=relaxed)) if r.key == key), None)
    if after is None:
        return 2, f"then {key} is no longer an option"
    if after.passes and after.headline_ok:
        return 0, f"then {key} passes"
    if after.passes:
        return 1, f"then {key} passes, but {not_recommendable(after)}, so it cannot be recommended"
    still = "; ".join(f"{g.constraint}: {g.detail}" for g in after.failures)
    tail = "" if after.headline_ok else f"; and {not_recommendable(after)}, so it cannot be recommended"
    return 2, f"then {key} still fails {still}{tail}"


def advise(rows: list[Row], cons: Constraints, recheck: Recheck, n: int = 3) -> Advice | None:
    """None when some row passes; else the `n` closest rows and the single-constraint relaxations, re-checked."""
    if any(r.passes and r.headline_ok for r in rows):
        return None
    closest = sorted(rows, key=lambda r: (len(r.failures), r.monthly_usd if r.monthly_usd is not None else math.inf))[:n]
    seen: dict[str, list[Row]] = {}

    def once(c: Constraints) -> list[Row]:  # many rows share one relaxation (allow GPUs, a vendor): evaluate it once
        return seen[k] if (k := c.model_dump_json()) in seen else seen.setdefault(k, recheck(c))

    by_kind: dict[str, list[tuple[Row, Failure]]] = {}
    for r in rows:
        if len(r.failures) == 1:
            f = r.failures[0]
            by_kind.setdefault(f.constraint + ":" + (f.detail.split(" ")[1] if f.constraint == "slo" else ""),
                               []).append((r, f))
    give: dict[str, tuple[int, float, str]] = {}
    for kind, fails in by_kind.items():
        # smallest change first; a re-check evaluates every option, so at most MAX_RECHECKS per kind, and none
        # after one passes (a runs folder of 1,000 options took 152 s re-checking each)
        rechecked = 0
        # among equal changes, rows whose evidence can carry a headline first: with many catalog parts, the
        # MAX_RECHECKS cheapest "allow X" were all uncalibrated estimates and the measured option was never offered
        for r, f in sorted(fails, key=lambda rf: (_size(rf[1]), not rf[0].headline_ok)):
            if f.relaxed:
                if rechecked == MAX_RECHECKS:
                    continue
                rechecked += 1
                rank, then = outcome(r.key, f.relaxed, cons, once)
            else:
                rank, then = 3, f"for {r.key}; its other constraints cannot be checked until then"
            best = (rank, _size(f), f"{f.would_have_to_give} ({then})")
            if kind not in give or best[:2] < give[kind][:2]:
                give[kind] = best
            if rank == 0:
                break
    if not give and closest:
        fails = closest[0].failures
        needs = "; ".join(dict.fromkeys(f.would_have_to_give for f in fails))  # ordered, no repeats
        if all(f.relaxed for f in fails):
            then = outcome(closest[0].key, {k: v for f in fails for k, v in f.relaxed.items()}, cons, once)[1]
        else:
            then = "not re-checked: some of it needs a measurement"
        give["_"] = (0, 0.0, f"no single change suffices; the closest option needs: {needs} ({then})")
    return Advice(tuple(r.key for r in closest), tuple(v[2] for v in sorted(give.values())))
