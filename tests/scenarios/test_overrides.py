"""The command line's overrides and a scenario's fit block are one set of settings, validated once."""

from __future__ import annotations

import dataclasses

import pytest

from scenarios.catalog import scenario_from_dict
from scenarios.errors import ScenarioError
from scenarios.overrides import Knobs, Overrides
from scenarios.spec import Fit

BASE = {"name": "t", "description": "A scenario for the override tests, twenty chars.",
        "workload": {"input": {"dist": "fixed", "value": 8}, "output": {"dist": "fixed", "value": 8}},
        "arrival": {"process": "poisson", "rate_rps": 1.0}, "duration_s": 10}


def test_fit_and_overrides_share_their_fields_and_checks():
    shared = {f.name for f in dataclasses.fields(Knobs)}
    assert shared <= {f.name for f in dataclasses.fields(Fit)} and shared <= {f.name for f in dataclasses.fields(Overrides)}
    with pytest.raises(ValueError, match=r"^--max-output-tokens must be an integer >= 1, got 0$"):
        Overrides(max_output_tokens=0)
    for bad, why in (({"rate_rps": -1}, "fit: rate_rps must be a finite number > 0"),
                     ({"max_requests": 0}, "fit: max_requests must be an integer >= 1"),
                     ({"max_input_tokens": 10**9}, "fit: max_input_tokens must be at most 10,000,000"),
                     ({"warmup_s": -1}, "fit: warmup_s must be a finite number >= 0"),
                     ({"rate": 2}, "unknown key 'fit.rate'")):
        with pytest.raises(ScenarioError, match=why):
            scenario_from_dict({**BASE, "fit": bad}, origin="t.yaml")


def test_a_fit_block_reads_back_as_it_was_written():
    s = scenario_from_dict({**BASE, "fit": {"rate_rps": 2, "duration_s": 30, "arrival": {"process": "constant",
                                                                                          "rate_rps": 2}}}, origin="t.yaml")
    assert s.fit.rate_rps == 2.0 and s.fit.duration_s == 30 and s.fit.arrival.process == "constant"
    assert s.model_dump(mode="json")["fit"]["rate_rps"] == 2.0


def test_the_slos_block_is_the_schedules_slos_type():
    from scenarios.types import SLOs

    s = scenario_from_dict({**BASE, "slos": {"ttft_ms": 400, "percentile": 99}}, origin="t.yaml")
    assert s.slos == SLOs(ttft_ms=400.0, percentile=99.0)
    for bad, why in (({"ttft_ms": -1}, "must be a finite number > 0"), ({"ttft": 1}, "unknown key 'slos.ttft'"),
                     ({"percentile": 97.5}, "not one advisor reports")):
        with pytest.raises(ScenarioError, match=why):
            scenario_from_dict({**BASE, "slos": bad}, origin="t.yaml")
