"""Load the packaged catalogs and apply user overrides (a negotiated price wins).

Prices resolve per device-hour for one tier: a user override first, then the catalog's
price of that tier (owned_tco computed from capex with the stated assumptions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from advisor.catalog.models import (
    EngineOps,
    Hardware,
    HostedOffer,
    OwnedCostAssumptions,
    Price,
    Tier,
    owned_usd_per_hour,
)
from scenarios.yaml_file import YamlFileError, parse_yaml


class CatalogError(ValueError):
    """A catalog or override file that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class ResolvedPrice:
    hardware_id: str
    tier: str
    usd_per_hour: float
    source: str
    as_of: str
    assumptions: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Catalog:
    hardware: dict[str, Hardware]
    hosted: tuple[HostedOffer, ...]
    engines: dict[str, EngineOps]
    owned: OwnedCostAssumptions
    user_prices: dict[str, Price] = field(default_factory=dict)  # hardware id -> override

    def get(self, hardware_id: str) -> Hardware:
        if hardware_id not in self.hardware:
            raise CatalogError(f"unknown hardware {hardware_id!r}; known: {', '.join(sorted(self.hardware))}")
        return self.hardware[hardware_id]

    def price(self, hardware_id: str, tier: Tier | str = "cloud_on_demand") -> ResolvedPrice | None:
        """$/device-hour for `tier`: a user override wins over the catalog; None if no price is known."""
        assert tier in ("cloud_on_demand", "owned_tco"), tier
        hw = self.get(hardware_id)
        if hardware_id in self.user_prices:
            p = self.user_prices[hardware_id]
            assert p.usd_per_hour is not None
            return ResolvedPrice(hardware_id, "user", p.usd_per_hour, p.source, p.as_of)
        for p in hw.prices:
            if p.tier != tier:
                continue
            if p.usd_per_hour is not None:
                return ResolvedPrice(hardware_id, tier, p.usd_per_hour, p.source, p.as_of, p.assumptions)
            assert p.capex_usd is not None
            usd = owned_usd_per_hour(p.capex_usd, hw.tdp_w, self.owned)
            why = f"capex ${p.capex_usd:,.0f} ({p.source}); {self.owned.source}"
            return ResolvedPrice(hardware_id, tier, usd, why, p.as_of, self.owned.source)
        if tier == "owned_tco":  # no capex known: fall back to renting, and say so
            rented = self.price(hardware_id, "cloud_on_demand")
            if rented is not None:
                return ResolvedPrice(hardware_id, "cloud_on_demand", rented.usd_per_hour,
                                     rented.source + " (no owned price in the catalog: cloud price used)", rented.as_of)
        return None

    def engine_ops(self, engine: str) -> EngineOps | None:
        return self.engines.get(engine)

    def with_hardware(self, extra: Hardware) -> Catalog:
        return Catalog({**self.hardware, extra.id: extra}, self.hosted, self.engines, self.owned, self.user_prices)

    def with_prices(self, prices: dict[str, Price]) -> Catalog:
        for hw_id in prices:
            self.get(hw_id)  # unknown id -> clear error
        return Catalog(self.hardware, self.hosted, self.engines, self.owned, {**self.user_prices, **prices})


def _read_yaml(text: str, where: str) -> dict[str, Any]:
    try:
        d = parse_yaml(text, where)  # duplicate keys refused, the file named in every error
    except YamlFileError as e:
        raise CatalogError(str(e)) from None
    if not isinstance(d, dict):
        raise CatalogError(f"{where}: expected a mapping at the top level")
    return d


def _packaged(name: str) -> dict[str, Any]:
    text = resources.files("advisor.catalog").joinpath("data", name).read_text(encoding="utf-8")
    return _read_yaml(text, f"advisor/catalog/data/{name}")


def load_catalog(prices_file: Path | None = None, price_flags: dict[str, float] | None = None) -> Catalog:
    """The packaged catalog, with a `--prices FILE` and `--price ID=USD` flags applied (flags win)."""
    try:
        hw_doc = _packaged("hardware.yaml")
        hardware = {h["id"]: Hardware(**h) for h in hw_doc["hardware"]}
        owned = OwnedCostAssumptions(**hw_doc["owned_tco"])
        hosted = tuple(HostedOffer(**h) for h in _packaged("hosted.yaml")["hosted"])
        engines = {k: EngineOps(**v) for k, v in _packaged("engines.yaml")["engines"].items()}
    except (ValidationError, KeyError) as e:
        raise CatalogError(f"packaged catalog is invalid ({e}); this is a bug in advisor/catalog/data") from None
    cat = Catalog(hardware, hosted, engines, owned)
    if prices_file is not None:
        cat = apply_overrides(cat, prices_file)
    if price_flags:
        cat = cat.with_prices({k: Price(tier="user", usd_per_hour=v, source="--price flag", as_of="user")
                               for k, v in price_flags.items()})
    return cat


def apply_overrides(cat: Catalog, path: Path) -> Catalog:
    """Apply a user prices file: `prices: {hw_id: usd_per_hour | {usd_per_hour, source}}`, `hardware: [...]`."""
    path = Path(path)
    if not path.is_file():
        raise CatalogError(f"prices file {path} not found; pass an existing YAML file to --prices")
    d = _read_yaml(path.read_text(), str(path))
    unknown = set(d) - {"prices", "hardware", "hosted"}
    if unknown:
        raise CatalogError(f"{path}: unknown keys {sorted(unknown)}; allowed: prices, hardware, hosted")
    try:
        for h in d.get("hardware") or []:
            cat = cat.with_hardware(Hardware(**h))
        if d.get("hosted"):
            cat = Catalog(cat.hardware, cat.hosted + tuple(HostedOffer(**h) for h in d["hosted"]),
                          cat.engines, cat.owned, cat.user_prices)
        prices: dict[str, Price] = {}
        for hw_id, v in (d.get("prices") or {}).items():
            v = {"usd_per_hour": v} if isinstance(v, int | float) else dict(v)
            v.setdefault("source", f"user prices file {path.name}")
            v.setdefault("as_of", "user")
            prices[str(hw_id)] = Price(tier="user", **v)
    except ValidationError as e:
        raise CatalogError(f"{path}: {e.errors()[0]['loc']}: {e.errors()[0]['msg']}") from None
    return cat.with_prices(prices)


def parse_price_flags(values: tuple[str, ...] | list[str]) -> dict[str, float]:
    """`["h100-sxm=2.1", ...]` -> {"h100-sxm": 2.1}; a malformed flag raises CatalogError naming it."""
    out: dict[str, float] = {}
    for v in values:
        hw_id, sep, usd = v.partition("=")
        try:
            price = float(usd)
        except ValueError:
            price = -1.0
        if not sep or price <= 0:
            raise CatalogError(f"--price {v!r}: expected HARDWARE_ID=USD_PER_HOUR with a positive price, e.g. h100-sxm=2.10")
        out[hw_id.strip()] = price
    return out
