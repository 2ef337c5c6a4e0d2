"""The price of each run's hardware and its cost per 1M tokens, for the report and the dashboard.

Prices come from the hardware catalog (`advisor.catalog`, user overrides win) via
the run manifest's hardware; the arithmetic is `advisor.catalog.cost`'s. Nothing here
computes a cost of its own. A run whose hardware is not in the catalog has no
price, and the report says so instead of guessing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.catalog.cost import HOURS_PER_MONTH, RunCost, monthly_cost_usd, run_cost
from advisor.saved.store import RunResult


@dataclass(frozen=True)
class RunPrice:
    """What one run's hardware costs, where that figure came from, and the run's cost per 1M tokens."""

    run_id: str
    hardware_id: str | None
    usd_per_hour: float | None
    source: str  # catalog source and date, "user", or why there is no price
    cost: RunCost | None

    @property
    def monthly_usd(self) -> float | None:
        """One always-on instance for a 730-hour month."""
        if self.usd_per_hour is None:
            return None
        return monthly_cost_usd(self.usd_per_hour, 1.0, 1)

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (JSON built from properties, never read back)
        return {"run_id": self.run_id, "hardware_id": self.hardware_id, "usd_per_hour": self.usd_per_hour,
                "source": self.source, "monthly_usd": self.monthly_usd,
                "cost": self.cost.to_dict() if self.cost else None, "hours_per_month": HOURS_PER_MONTH}


def price_runs(runs: Sequence[RunResult], usd_per_hour: float | None = None,
               catalog: Any | None = None) -> dict[str, RunPrice]:
    """A price per run id: `usd_per_hour` for all runs if given, else each run's catalog entry."""
    if usd_per_hour is not None and usd_per_hour < 0:
        raise ValueError(f"a price must be >= 0 $/hour, got {usd_per_hour}")
    if usd_per_hour is None and catalog is None:
        catalog = _load_catalog()
    out: dict[str, RunPrice] = {}
    for run in runs:
        if run.engine.extra.get("simulated_device"):  # own_engine's sim device: its throughput is no hardware's
            out[run.run_id] = RunPrice(run.run_id, None, None, "not priced: the device was simulated", None)
            continue
        if usd_per_hour is not None:
            hw_id, usd, source = None, usd_per_hour, "given by the user"
        else:
            hw_id, usd, source = _catalog_price(run, catalog)
        cost = run_cost(run.summary, usd) if usd is not None else None
        out[run.run_id] = RunPrice(run.run_id, hw_id, usd, source, cost)
    return out


def _load_catalog() -> Any | None:
    try:
        from advisor.catalog.loader import load_catalog
    except ImportError:  # the catalog is part of the package; without it the report shows no prices
        return None
    return load_catalog()


def _catalog_price(run: RunResult, catalog: Any | None) -> tuple[str | None, float | None, str]:
    if catalog is None:
        return None, None, "no hardware catalog available"
    from advisor.recommend.machines import is_served, run_machine

    m = run_machine(run, catalog)
    entry = m.hardware
    if entry is None and is_served(run):
        return None, None, ("served from unknown hardware: the server's was not declared (bench --server-hardware "
                            "ID), so it is not priced")
    if entry is None:
        return None, None, "hardware not in the catalog: pass a price (--price-usd-hour) to see costs"
    price = catalog.price(entry.id) if entry.id in catalog.hardware else None
    if price is None:
        fix = "; pass a price (--price-usd-hour) to see costs" if entry.unlisted else ""
        return entry.id, None, f"no price for {entry.name} in the catalog{fix}"
    devices = f" x {m.devices} devices" if m.devices > 1 else ""
    return (entry.id, price.usd_per_hour * m.devices,
            f"{entry.name}{devices}: {price.tier}, {price.source} (as of {price.as_of})")
