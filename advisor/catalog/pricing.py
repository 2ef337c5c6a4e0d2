"""A tier's price computed from its quotes, by the one policy per tier that hardware.yaml states.

cloud_on_demand: the median of the listed per-device prices, one quote per provider (a node price
divided by its devices, and said to be derived). Quotes from memory count only where no citable
quote exists, and then the price is marked `from_memory`. Fewer than two citable providers is
allowed but said (`policy_met` False), so a single listing is never passed off as a market price; an undated
listing counts in the median but not towards the two.

owned_tco: the same median taken over purchase prices (capex per device), then amortised with the
stated assumptions plus power at TDP (`owned_usd_per_hour`). It never falls back to a rental price:
a part with no purchase quote has no owned price.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from advisor.catalog.models import Hardware, OwnedCostAssumptions, Price, Quote, owned_usd_per_hour
from fileform import FileForm

MIN_PROVIDERS = 2  # the policy's "at least two named providers"


@dataclass(frozen=True)
class ResolvedPrice(FileForm):
    hardware_id: str
    tier: str
    usd_per_hour: float
    source: str
    as_of: str
    assumptions: str | None = None
    from_memory: bool = False  # no citable quote: recommend does not headline it (pass --price)
    policy_met: bool = True  # False: fewer citable providers than the policy asks for
    quotes: tuple[dict[str, Any], ...] = ()  # the quotes the median was taken over, as listed


def _date_span(quotes: list[Quote]) -> str:
    dated = sorted(q.as_of for q in quotes if q.as_of)
    undated = " (some undated)" if len(dated) < len(quotes) else ""
    if not dated:
        return "undated"
    return (dated[0] if dated[0] == dated[-1] else f"{dated[0]} to {dated[-1]}") + undated


def _one_per_provider(quotes: list[Quote]) -> list[Quote]:
    """The latest-dated quote of each provider (a provider's newer list price replaces its older one)."""
    best: dict[str, Quote] = {}
    for q in quotes:
        key = q.provider.lower()
        if key not in best or (q.as_of or "") > (best[key].as_of or ""):
            best[key] = q
    return list(best.values())


def used_quotes(quotes: tuple[Quote, ...]) -> tuple[list[Quote], bool]:
    """The quotes the policy takes the median over, and whether they are from memory (no citable one)."""
    cited = [q for q in quotes if not q.from_memory]
    chosen = cited or list(quotes)
    return _one_per_provider(chosen), not cited


def _quote_text(q: Quote, unit: str) -> str:
    node = q.usd_per_node_hour or q.capex_usd_per_node
    derived = f" (derived: ${node:,.6g} per {q.devices_per_node}-device node / {q.devices_per_node})" if q.derived else ""
    when = "from memory" if q.from_memory else f"on {q.as_of or 'an undated page'}"
    return f"{q.provider} ${q.per_device:,.4g}{unit}{derived} {when}"


def quoted_price(hw: Hardware, p: Price, owned: OwnedCostAssumptions) -> ResolvedPrice:
    """The tier price of `p` (which has quotes) on `hw`, by the stated policy."""
    assert p.quotes and p.tier in ("cloud_on_demand", "owned_tco"), p
    chosen, memory = used_quotes(p.quotes)
    median = statistics.median(q.per_device for q in chosen)
    n, dated = len(chosen), sum(1 for q in chosen if q.as_of)
    met = not memory and dated >= MIN_PROVIDERS  # the policy asks for two providers' dated list prices
    # the flag goes last and the text has no "; ": a headline's price line keeps what comes before the first "; "
    flag = (", from memory: no citable source" if memory else "" if met
            else f", only {dated} dated citable provider{'' if dated == 1 else 's'}")
    quotes = tuple({"provider": q.provider, "url": q.url, "as_of": q.as_of, "listed": q.listed,
                    "per_device": q.per_device, "derived_from_node": q.derived, "from_memory": q.from_memory}
                   for q in chosen)
    if p.tier == "cloud_on_demand":
        listed = ", ".join(_quote_text(q, "/h") for q in chosen)
        source = f"{f'median of {n} listed prices' if n > 1 else 'one listed price'} ({listed}){flag}"
        return ResolvedPrice(hw.id, p.tier, median, source, _date_span(chosen), None, memory, met, quotes)
    usd = owned_usd_per_hour(median, hw.tdp_w, owned)
    listed = ", ".join(_quote_text(q, "") for q in chosen)
    source = (f"capex ${median:,.0f} per device (median of {n}: {listed}){flag}, amortised over "
              f"{owned.amortization_years:g} years plus power at {hw.tdp_w or 0:g} W")
    return ResolvedPrice(hw.id, p.tier, usd, source, _date_span(chosen), owned.source, memory, met, quotes)


def tier_price(hw: Hardware, tier: str, owned: OwnedCostAssumptions) -> ResolvedPrice | None:
    """$/device-hour of `hw` in `tier` from its catalog (or user-added) prices; None when it has none."""
    for p in hw.prices:
        if p.tier != tier:
            continue
        if p.quotes:
            return quoted_price(hw, p, owned)
        if p.usd_per_hour is not None:  # hardware a user added with its own price: taken as given
            return ResolvedPrice(hw.id, tier, p.usd_per_hour, p.source, p.as_of, p.assumptions)
        assert p.capex_usd is not None
        usd = owned_usd_per_hour(p.capex_usd, hw.tdp_w, owned)
        return ResolvedPrice(hw.id, tier, usd, f"capex ${p.capex_usd:,.0f} ({p.source}); {owned.source}",
                             p.as_of, owned.source)
    return None
