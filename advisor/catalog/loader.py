"""Load the packaged catalogs and apply user overrides (a negotiated price wins).

Prices resolve per device-hour for one tier: a user override first, then the catalog's
price of that tier, computed from its quotes by the tier's policy (`advisor.catalog.pricing`).
"""

from __future__ import annotations

import math
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
)
from advisor.catalog.pricing import ResolvedPrice, tier_price
from scenarios.yaml_file import YamlFileError, parse_yaml


class CatalogError(ValueError):
    """A catalog or override file that cannot be used; the message names the file and the fix."""


# What a valid override looks like, for the errors that name a bad one.
PRICE_EXAMPLE = ("a positive number of USD per device-hour, e.g. `h100-sxm: 2.10` or "
                 "`h100-sxm: {usd_per_hour: 2.10, source: our contract}`")
ENTRY_KEY = {"hardware": "id", "hosted": "provider"}  # the first field of an entry


__all__ = ["Catalog", "CatalogError", "ResolvedPrice", "load_catalog", "parse_price_flags"]


@dataclass(frozen=True)
class Catalog:
    hardware: dict[str, Hardware]
    hosted: tuple[HostedOffer, ...]
    engines: dict[str, EngineOps]
    owned: OwnedCostAssumptions
    user_prices: dict[str, Price] = field(default_factory=dict)  # hardware id -> override
    policy: dict[str, str] = field(default_factory=dict)  # tier -> the pricing policy as hardware.yaml states it

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
        return tier_price(hw, tier, self.owned)  # owned_tco never falls back to a rental price

    def engine_ops(self, engine: str) -> EngineOps | None:
        return self.engines.get(engine)

    def with_hardware(self, extra: Hardware) -> Catalog:
        return Catalog({**self.hardware, extra.id: extra}, self.hosted, self.engines, self.owned, self.user_prices,
                       self.policy)

    def with_prices(self, prices: dict[str, Price]) -> Catalog:
        for hw_id in prices:
            self.get(hw_id)  # unknown id -> clear error
        return Catalog(self.hardware, self.hosted, self.engines, self.owned, {**self.user_prices, **prices}, self.policy)


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
        policy = {str(k): str(v) for k, v in hw_doc["pricing_policy"].items()}
        hosted = tuple(HostedOffer(**h) for h in _packaged("hosted.yaml")["hosted"])
        engines = {k: EngineOps(**v) for k, v in _packaged("engines.yaml")["engines"].items()}
    except (ValidationError, KeyError) as e:
        raise CatalogError(f"packaged catalog is invalid ({e}); this is a bug in advisor/catalog/data") from None
    unquoted = [f"{h.id} {p.tier}" for h in hardware.values() for p in h.prices if not p.quotes]
    if unquoted or set(policy) != {"cloud_on_demand", "owned_tco"}:
        raise CatalogError(f"packaged catalog: every price needs quotes (not: {', '.join(unquoted) or 'none'}) and "
                           "pricing_policy one line per tier; this is a bug in advisor/catalog/data")
    cat = Catalog(hardware, hosted, engines, owned, policy=policy)
    if prices_file is not None:
        cat = apply_overrides(cat, prices_file)
    if price_flags:
        cat = cat.with_prices({k: Price(tier="user", usd_per_hour=v, source="--price flag", as_of="user")
                               for k, v in price_flags.items()})
    return cat


def apply_overrides(cat: Catalog, path: Path) -> Catalog:
    """Apply a user prices file: `prices: {hw_id: usd_per_hour | {usd_per_hour, source}}`, `hardware: [...]`."""
    path = Path(path)
    if path.is_dir():
        raise CatalogError(f"prices file {path} is a folder; pass a YAML file to --prices (`prices: {{h100-sxm: 2.10}}`)")
    if not path.is_file():
        raise CatalogError(f"prices file {path} not found; pass an existing YAML file to --prices")
    d = _read_yaml(path.read_text(), str(path))
    unknown = set(d) - {"prices", "hardware", "hosted"}
    if unknown:
        raise CatalogError(f"{path}: unknown keys {sorted(unknown)}; allowed: prices, hardware, hosted")
    bad = _non_finite(d)
    if bad is not None:
        valid = PRICE_EXAMPLE if bad[0].startswith("prices") else "a finite number"
        raise CatalogError(f"{path}: {bad[0]} is {bad[1]}; give {valid}")
    for i, h in enumerate(_entries(d, "hardware", path)):
        cat = cat.with_hardware(_build(Hardware, h, path, f"hardware[{i}]"))
    hosted = tuple(_build(HostedOffer, h, path, f"hosted[{i}]") for i, h in enumerate(_entries(d, "hosted", path)))
    if hosted:
        cat = Catalog(cat.hardware, cat.hosted + hosted, cat.engines, cat.owned, cat.user_prices, cat.policy)
    given = d.get("prices") or {}
    if not isinstance(given, dict):
        raise CatalogError(f"{path}: prices must map hardware ids to prices, each {PRICE_EXAMPLE}")
    prices: dict[str, Price] = {}
    for hw_id, v in given.items():
        where = f"prices.{hw_id}"
        if _is_number(v):
            v = {"usd_per_hour": v}
        elif not isinstance(v, dict):
            raise CatalogError(f"{path}: {where} is {v!r}; give {PRICE_EXAMPLE}")
        prices[str(hw_id)] = _build(Price, {"source": f"user prices file {path.name}", "as_of": "user", **v,
                                            "tier": "user"}, path, where)
    return cat.with_prices(prices)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _non_finite(v: Any, where: str = "") -> tuple[str, float] | None:
    """The first (key path, value) in a parsed document whose number is NaN or infinite (YAML's .nan, .inf)."""
    if isinstance(v, float) and not math.isfinite(v):
        return where or "the document", v
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, x in items:
        found = _non_finite(x, f"{where}[{k}]" if isinstance(k, int) else f"{where}.{k}" if where else str(k))
        if found is not None:
            return found
    return None


def _entries(d: dict[str, Any], key: str, path: Path) -> list[dict[str, Any]]:
    """The `hardware:` or `hosted:` list of a prices file, each entry a mapping (else a CatalogError naming it)."""
    entries = d.get(key) or []
    if not isinstance(entries, list):
        raise CatalogError(f"{path}: {key} must be a list of mappings (`{key}:` then one `- {ENTRY_KEY[key]}: ...` "
                           f"entry per item), got {type(entries).__name__}")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise CatalogError(f"{path}: {key}[{i}] is {e!r}; each entry must be a mapping of field names to values")
    return entries


def _build(model: Any, fields: dict[str, Any], path: Path, where: str) -> Any:
    """`model(**fields)`, or a CatalogError naming the file, the entry, the field and the problem."""
    try:
        return model(**{str(k): v for k, v in fields.items()})
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in (where, *err["loc"]))
        got = f" (got {err['input']!r})" if "input" in err and not isinstance(err["input"], dict) else ""
        raise CatalogError(f"{path}: {loc}: {err['msg']}{got}") from None


def parse_price_flags(values: tuple[str, ...] | list[str]) -> dict[str, float]:
    """`["h100-sxm=2.1", ...]` -> {"h100-sxm": 2.1}; a malformed flag raises CatalogError naming it."""
    out: dict[str, float] = {}
    for v in values:
        hw_id, sep, usd = v.partition("=")
        try:
            price = float(usd)
        except ValueError:
            price = -1.0
        if not sep or not hw_id.strip() or not (math.isfinite(price) and price > 0):
            raise CatalogError(f"--price {v!r}: expected HARDWARE_ID=USD_PER_HOUR with a positive, finite price, "
                               "e.g. h100-sxm=2.10")
        out[hw_id.strip()] = price
    return out
