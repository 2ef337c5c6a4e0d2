"""Run prices: a given $/hour, or the catalog's price for the run's machine, costed by advisor.catalog.cost."""

from __future__ import annotations

import dataclasses

from advisor.catalog.cost import run_cost
from reports.costs import price_runs


def test_given_price_is_costed_with_advisor_cost(saved_runs):
    run = saved_runs[0]
    price = price_runs([run], usd_per_hour=3.0)[run.run_id]
    assert price.cost == run_cost(run.summary, 3.0)
    assert price.monthly_usd == 3.0 * 730


def test_catalog_price_names_its_source(saved_runs):
    price = next(iter(price_runs(saved_runs[:1]).values()))
    if price.usd_per_hour is None:  # this machine is not in the catalog: the report says why
        assert "catalog" in price.source
    else:
        assert "as of" in price.source and price.cost is not None


def test_unknown_hardware_has_no_price_and_says_so(saved_runs):
    run = dataclasses.replace(saved_runs[0], manifest={"hardware": {"gpus": [{"name": "Imaginary GPU 9000"}]}})
    price = price_runs([run])[run.run_id]
    assert price.usd_per_hour is None and price.cost is None
    assert "--price-usd-hour" in price.source


def test_a_run_on_own_engines_simulated_device_is_never_priced(saved_runs):
    engine = dataclasses.replace(saved_runs[0].engine, device="sim:h200 (SIMULATED ...)",
                                 extra={**saved_runs[0].engine.extra, "simulated_device": {"name": "h200"}})
    run = dataclasses.replace(saved_runs[0], engine=engine)
    for price in (price_runs([run])[run.run_id], price_runs([run], usd_per_hour=3.0)[run.run_id]):
        assert price.usd_per_hour is None and price.cost is None and "simulated" in price.source
