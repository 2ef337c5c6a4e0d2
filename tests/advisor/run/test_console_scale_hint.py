"""The console's "Fitted to a small machine" note names the fit that ran, never a fitted value the user's flag replaced."""

from __future__ import annotations

from types import SimpleNamespace

from advisor.run import console
from advisor.run.schedule import RunSchedule
from scenarios.catalog import load_scenario
from scenarios.overrides import Overrides
from scenarios.settings import Settings


def _result(overrides: dict) -> SimpleNamespace:
    scenario = load_scenario("copilot").model_dump(mode="json")
    schedule = RunSchedule(mode="open", overrides=Overrides(**overrides), effective=Settings(fitted=True))
    return SimpleNamespace(scenario=scenario, schedule=schedule)


def test_without_flags_the_note_quotes_the_fit():
    hint = console._scale_hint(_result({}))
    assert "arrival process=gamma rate_rps=3.2 cv=1.5" in hint and "duration_s=45" in hint and "yours" not in hint


def test_a_flag_replaces_the_fitted_value_in_the_note():
    hint = console._scale_hint(_result({"rate_rps": 9.0, "duration_s": 20.0, "seed": 3}))
    assert "rate_rps=3.2" not in hint and "duration_s=45" not in hint  # these did not run
    assert "arrival process=gamma cv=1.5" in hint and "length_scale=0.5" in hint  # these did
    assert "yours: --rate 9.0, --duration 20.0, --seed 3" in hint


def test_no_note_at_full_scale():
    r = _result({})
    r.schedule = RunSchedule(mode="open", effective=Settings(fitted=False))
    assert console._scale_hint(r) is None


def test_the_note_says_fitted_not_scaled_down():
    # a fitted log's scenario runs at 2.5 req/s against the log's 2.01: "Scaled down" said the real traffic is heavier
    hint = console._scale_hint(_result({}))
    assert hint.startswith("Fitted to a small machine (the scenario's fit block: ") and "Scaled down" not in hint
