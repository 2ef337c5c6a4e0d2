"""Hardware, price, hosted-API and engine-complexity catalogs, shipped as YAML data in the package.

`load_catalog()` reads them, applies user overrides, and resolves hourly prices per tier: a catalog price is
computed from its quotes by the tier's stated policy (`pricing.py`).
"""

from __future__ import annotations

from advisor.catalog.loader import Catalog, CatalogError, ResolvedPrice, load_catalog, parse_price_flags
from advisor.catalog.models import COMPLEXITY_ORDER, EngineOps, Hardware, HostedOffer, Price, Quote

__all__ = ["COMPLEXITY_ORDER", "Catalog", "CatalogError", "EngineOps", "Hardware", "HostedOffer", "Price", "Quote",
           "ResolvedPrice", "load_catalog", "parse_price_flags"]
