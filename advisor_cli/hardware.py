"""`advisor hardware`: the hardware and price catalog, with sources, and the machine detected here."""

from __future__ import annotations

import json
from pathlib import Path

import click

from advisor_cli.options import catalog_from_flags, price_flags


@click.command("hardware")
@click.option("--measure/--no-measure", default=True, help="Measure this machine's memory bandwidth.")
@click.option("--price-tier", type=click.Choice(["cloud_on_demand", "owned_tco"]), default="cloud_on_demand")
@price_flags
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
def hardware_command(measure: bool, price_tier: str, prices: Path | None, price: tuple[str, ...], as_json: bool) -> None:
    """List the hardware catalog (specs, prices, sources) and which entry this machine is."""
    from advisor.hardware.detect import detect
    from advisor.recommend.render import print_hardware

    catalog = catalog_from_flags(prices, price)
    det = detect(catalog, measure=measure).to_dict()
    if as_json:
        click.echo(json.dumps({"pricing_policy": catalog.policy,
                               "catalog": [h.model_dump() for h in catalog.hardware.values()],
                               "prices": {h: (p.to_dict() if (p := catalog.price(h, price_tier)) else None)
                                          for h in catalog.hardware},
                               "hosted": [o.model_dump() for o in catalog.hosted], "detected": det}, default=str))
    else:
        print_hardware(catalog, det, price_tier)
