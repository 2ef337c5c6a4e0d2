"""Break-even volume between self-hosting a ranked row and a hosted API.

Self-hosting costs `m` USD per replica-month whatever the volume; a hosted API costs
its per-token price at the workload's own input:output mix. One replica breaks even at
m / hosted price tokens per month, provided it can serve that volume at its SLO
capacity; if it cannot, self-hosting at that size never breaks even (its cost per token
at full load is above the hosted price). Hosted models differ in quality: the table
compares cost only, and says which model class the offer competes with.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.catalog import HostedOffer
from advisor.catalog.cost import HOURS_PER_MONTH
from advisor.recommend.ranking import Row
from fileform import FileForm


@dataclass(frozen=True)
class BreakEven(FileForm):
    row_key: str
    provider: str
    model: str
    model_class: str
    hosted_usd_per_1m_mix: float  # at the workload's input:output mix
    self_usd_per_1m_full_load: float  # one replica at SLO capacity
    replica_usd_month: float
    replica_capacity_tokens_month_m: float
    break_even_tokens_month_m: float | None  # None: never at this size
    verdict: str
    source: str


def break_even(row: Row, offer: HostedOffer) -> BreakEven | None:
    """Break-even for one ranked row against one hosted offer; None if the row has no price or capacity."""
    c = row.candidate
    if row.usd_per_hour is None or not c.capacity_rps:
        return None
    tok = c.input_tokens_per_request + c.output_tokens_per_request
    if tok <= 0:
        return None
    hosted = (c.input_tokens_per_request * offer.input_usd_per_1m + c.output_tokens_per_request * offer.output_usd_per_1m) / tok
    m = row.usd_per_hour * c.devices * HOURS_PER_MONTH
    cap_m = c.capacity_rps * tok * HOURS_PER_MONTH * 3600.0 / 1e6
    self_full = m / cap_m
    be = m / hosted if hosted > 0 else None
    if be is not None and be <= cap_m:
        verdict = (f"self-hosting is cheaper above {be:,.0f}M tokens/month "
                   f"(one replica serves up to {cap_m:,.0f}M)")
    else:
        be = None
        verdict = (f"never at this size: at full load self-hosting costs ${self_full:.3g}/1M tokens, "
                   f"hosted ${hosted:.3g}/1M")
    return BreakEven(row.key, offer.provider, offer.model, offer.model_class, hosted, self_full, m, cap_m, be,
                     verdict, f"{offer.source} ({offer.as_of})")


def break_evens(rows: list[Row], offers: tuple[HostedOffer, ...], top: int = 3) -> list[BreakEven]:
    """Break-even of the `top` best-ranked priced rows (passing first) against every hosted offer."""
    chosen = [r for r in rows if r.passes and r.headline_ok and r.usd_per_hour is not None][:top]
    if not chosen:
        chosen = [r for r in rows if r.usd_per_hour is not None and r.candidate.capacity_rps][:1]
    out = []
    for r in chosen:
        for o in offers:
            be = break_even(r, o)
            if be is not None:
                out.append(be)
    return out
