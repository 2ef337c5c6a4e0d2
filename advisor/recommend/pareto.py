"""Pareto frontier of cost against latency and against interactivity over priced rows.

The one dominance rule of the project (the report's figures use it too): a point is on the
frontier when no other point is at least as good on both axes and strictly better on one, so two
equal points are both kept. Cost is monthly USD when a load is given, else blended $/1M.
Each key has a label that marks its evidence as the ranking table does ("est?": an estimate that
cannot carry a recommendation), so a frontier never shows an estimate as if it were measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.recommend.ranking import Row
from fileform import FileForm


@dataclass(frozen=True)
class Frontier(FileForm):
    cost_axis: str
    other_axis: str
    keys: tuple[str, ...]  # row keys on the frontier, cheapest first
    labels: tuple[str, ...] = ()  # per key: "#rank engine@hardware", marked "(est)", "(est?)", "(meas?)" unless measured


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """a beats b: no worse on both axes and better on one (lower is better on both)."""
    return a[0] <= b[0] and a[1] <= b[1] and (a[0] < b[0] or a[1] < b[1])


def non_dominated(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points nothing dominates (lower is better on both), in input order."""
    return [i for i, p in enumerate(points) if not any(dominates(q, p) for q in points)]


def frontier(points: list[tuple[str, float, float]]) -> list[str]:
    """Keys of (key, cost, badness) points on the frontier, cheapest first."""
    front = non_dominated([(c, b) for _, c, b in points])
    return [k for _, _, k in sorted((points[i][1], points[i][2], points[i][0]) for i in front)]


def _cost(r: Row, by_monthly: bool) -> float | None:
    return r.monthly_usd if by_monthly else r.usd_per_1m_blended


def label(r: Row) -> str:
    """'#2 own@aws-m7i-8xlarge (est?)': the rank, the option and, unless plainly measured, the table's marker."""
    mark = "" if r.source_code == "meas" else f" ({r.source_code})"
    return f"#{r.rank} {r.candidate.engine}@{r.candidate.hardware_id}{mark}"


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
    by_key = {r.key: r for r in rows}
    out = []
    for other, points in (("ttft_ms", ttft), ("interactivity_tps (1000 / tpot_ms)", inter)):
        keys = tuple(frontier(points))
        out.append(Frontier(axis, other, keys, tuple(label(by_key[k]) for k in keys)))
    return out
