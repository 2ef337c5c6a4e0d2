from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.catalog import ScenarioError, list_scenarios, load_scenario, scenario_names
from scenarios.schedule import Overrides, build_schedule

REQUIRED = {"copilot", "chat", "bursty", "long-context", "batch", "azure-code-replay", "azure-conv-replay",
            "mooncake-sample", "chat-closed"}
NEEDS_AZURE = {"azure-code-replay", "azure-conv-replay"}


def test_required_scenarios_are_shipped() -> None:
    assert REQUIRED <= set(scenario_names())
    assert {s.name for s in list_scenarios()} == set(scenario_names())  # file name == scenario name


@pytest.mark.parametrize("name", sorted(REQUIRED - NEEDS_AZURE))
def test_shipped_scenario_builds_fitted_and_full_scale(name: str) -> None:
    s = load_scenario(name)
    assert s.description and s.source
    fitted = build_schedule(s)
    assert fitted.requests and fitted.scenario == name
    assert all(r.n_in >= 1 and r.n_out >= 1 for r in fitted.requests)
    # the fitted run fits the default tiny model's 4096-token context
    assert all(r.n_in + r.n_out <= 4096 for r in fitted.requests)
    assert build_schedule(s, overrides=Overrides(full_scale=True, max_requests=500)).requests


@pytest.mark.parametrize("name", sorted(NEEDS_AZURE))
def test_azure_replays_build(name: str, azure_traces: Path) -> None:
    fitted = build_schedule(load_scenario(name))
    assert 50 <= sum(not r.warmup for r in fitted.requests) <= 400
    assert all(r.n_in + r.n_out <= 4096 for r in fitted.requests)
    full = build_schedule(load_scenario(name), overrides=Overrides(full_scale=True))
    assert len(full.requests) in (8819, 19366)  # the whole trace


@pytest.mark.parametrize("seed", range(5))
def test_copilot_default_run_has_enough_measured_requests(seed: int) -> None:
    sch = build_schedule(load_scenario("copilot"), seed)
    assert 40 <= sch.duration_s <= 50 and sch.warmup_s + sch.duration_s <= 60
    assert sum(not r.warmup for r in sch.requests) >= 100  # p95 is valid


def test_missing_trace_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ADVISOR_TRACES", str(tmp_path / "empty"))
    (tmp_path / "mine.yaml").write_text(
        "name: mine\ndescription: A replay of a trace file that is not there.\n"
        "workload: {trace: {file: gone.csv}}\narrival: {process: trace}\nduration_s: 10\n")
    with pytest.raises(ScenarioError, match="'gone.csv' not found.*set ADVISOR_TRACES"):
        build_schedule(load_scenario(str(tmp_path / "mine.yaml")))


def test_replays_use_the_shipped_traces_whatever_advisor_traces_says(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("ADVISOR_TRACES", str(tmp_path))  # an empty folder: the package's copy is found
    assert len(build_schedule(load_scenario("azure-code-replay"), overrides=Overrides(full_scale=True)).requests) \
        == 8819


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(ScenarioError, match="unknown scenario 'nope'; choose one of .*copilot"):
        load_scenario("nope")


@pytest.mark.parametrize("name", ["gateway.jsonl", "sub/azure.csv", "spend.jsonl.gz"])
def test_a_request_log_given_as_the_scenario_names_the_fit_command(tmp_path: Path, monkeypatch, name: str) -> None:
    # a new user passes their log to `bench --scenario`; "malformed YAML; fix the syntax there" sent them the wrong way
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).parent.mkdir(exist_ok=True)
    (tmp_path / name).write_text('{"timestamp": 1, "usage": {"prompt_tokens": 5}}\n')
    with pytest.raises(ScenarioError, match=rf"^{name} is a request log, not a scenario YAML; make a scenario from it "
                                            rf"with `advisor scenarios fit {name} -o my-traffic.yaml`"):
        load_scenario(name)


def test_load_by_path_and_relative_trace(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text('{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [7, 8]}\n'
                                      '{"timestamp": 500, "input_length": 700, "output_length": 4, "hash_ids": [7, 9]}\n')
    (tmp_path / "mine.yaml").write_text(
        "name: mine\ndescription: A replay of a two-request trace for the tests.\n"
        "workload: {trace: {file: t.jsonl}}\narrival: {process: trace}\nduration_s: 10\n")
    sch = build_schedule(load_scenario(str(tmp_path / "mine.yaml")))
    assert [r.t_sched_s for r in sch.requests] == [0.0, 0.5]
    assert [r.prefix_blocks for r in sch.requests] == [(7,), (7,)]


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "broken.yaml"
    p.write_text("name: x\ndescription: fine so far\nworkload: {input: [1, 2\n")
    with pytest.raises(ScenarioError, match=r"broken.yaml, line \d+: malformed YAML"):
        load_scenario(str(p))


def _bad(tmp_path: Path, text: str) -> str:
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(ScenarioError) as e:
        load_scenario(str(p))
    return str(e.value)


GOOD = ("name: x\ndescription: A made-up scenario for a validation test.\n"
        "workload: {input: {dist: fixed, value: 5}, output: {dist: fixed, value: 5}}\n")


def test_unknown_keys_and_bad_values_are_named(tmp_path: Path) -> None:
    msg = _bad(tmp_path, GOOD + "arrival: {process: poisson, rate_rps: 1}\nwarmup: 3\n")
    assert "unknown key 'warmup'" in msg
    msg = _bad(tmp_path, GOOD + "arrival: {process: poisson, rate_rps: -2}\n")
    assert "arrival.rate_rps: Input should be greater than 0, got -2" in msg
    msg = _bad(tmp_path, GOOD + "arrival: {process: gamma, rate_rps: 1, cv: 500}\n")
    assert "arrival.cv" in msg and "100" in msg and "500" in msg
    msg = _bad(tmp_path, GOOD + "arrival: {process: warp, rate_rps: 1}\n")
    assert "arrival" in msg and "poisson" in msg and "warp" in msg
    msg = _bad(tmp_path, GOOD.replace("value: 5}, output", "value: 5}, ouput") + "arrival: {process: offline, requests: 3}\n")
    assert "unknown key 'workload.ouput'" in msg


def test_trace_arrival_needs_a_trace_workload(tmp_path: Path) -> None:
    assert "workload.trace" in _bad(tmp_path, GOOD + "arrival: {process: trace}\n")
