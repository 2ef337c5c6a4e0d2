"""Pareto frontier of cost against latency and against interactivity over priced rows.

A row is on the frontier when no other row is at least as good on both axes and
strictly better on one. Cost is monthly USD when a load is given, else blended $/1M.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.recommend.ranking import Row


@dataclass(frozen=True)
class Frontier:
    cost_axis: str
    other_axis: str
    keys: tuple[str, ...]  # row keys on the frontier, cheapest first

    def to_dict(self) -> dict[str, Any]:
        return {"cost_axis": self.cost_axis, "other_axis": self.other_axis, "keys": list(self.keys)}


def frontier(points: list[tuple[str, float, float]]) -> list[str]:
    """Keys of (key, cost, badness) points not dominated by another (lower is better on both)."""
    out = []
    for k, c, b in points:
        dominated = any((c2 <= c and b2 <= b) and (c2 < c or b2 < b) for _, c2, b2 in points)
        if not dominated:
            out.append((c, b, k))
    return [k for _, _, k in sorted(out)]


def _cost(r: Row, by_monthly: bool) -> float | None:
    return r.monthly_usd if by_monthly else r.usd_per_1m_blended


def pareto(rows: list[Row], by_monthly: bool) -> list[Frontier]:
    """Cost vs p-th percentile TTFT, and cost vs interactivity (1000 / TPOT, tokens/s per user)."""
    axis = "monthly_usd" if by_monthly else "usd_per_1m_blended"
    ttft, inter = [], []
    for r in rows:
        cost = _cost(r, by_monthly)
        if cost is None or r.candidate.capacity_rps is None:
            continue
        lat = r.candidate.latency_ms
        if (t := lat.get("ttft_ms")) is not None:
            ttft.append((r.key, cost, float(t)))
        if p := lat.get("tpot_ms"):
            inter.append((r.key, cost, float(p)))  # lower TPOT = higher interactivity
    return [Frontier(axis, "ttft_ms", tuple(frontier(ttft))),
            Frontier(axis, "interactivity_tps (1000 / tpot_ms)", tuple(frontier(inter)))]
