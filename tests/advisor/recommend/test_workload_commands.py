"""The commands the recommender prints measure the workload the runs measured (parsed back through the CLI)."""

from __future__ import annotations

import shlex
import socket

import pytest

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
from advisor.recommend.evidence import cell_command
from advisor.recommend.settle import settle
from advisor.recommend.workloads import LENGTH_KEYS, settings
from advisor_cli.bench import bench_command
from advisor_cli.options import overrides_from
from advisor_cli.sweep import sweep_command
from scenarios.catalog import load_scenario
from scenarios.schedule import resolve
from tests.advisor.recommend.h200 import CHAT, CLOSED, SATURATED, copy_runs, load, this_cpu_vm, write_edited

COMMANDS = {"sweep": sweep_command, "bench": bench_command}


@pytest.fixture(autouse=True)
def _host_is_vm(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")


def workload_of(command: str) -> tuple[tuple[str, object], ...]:
    """The workload key (as `workloads.settings` makes it) that the printed command would run."""
    args = shlex.split(command.split("  # ")[0])
    assert args[0] == "advisor" and args[1] in COMMANDS, command
    params = COMMANDS[args[1]].make_context(args[1], args[2:]).params  # the CLI's own parsing
    scenario = load_scenario(params["scenario"])
    eff = resolve(scenario, overrides_from(params))
    key: list[tuple[str, object]] = [("scenario", scenario.name)]
    for k in LENGTH_KEYS:
        v = getattr(eff, k)
        key.append((k, None if v is None or (k == "length_scale" and float(v) == 1.0) else v))
    return tuple(key)


def test_the_evidence_commands_run_the_runs_workload(tmp_path):
    runs = {r.run_id: r for r in load(copy_runs(tmp_path, (CHAT, SATURATED, CLOSED)))}
    for run_id in (CHAT, SATURATED, CLOSED):  # open loop: a sweep; closed loop: a bench
        run = runs[run_id]
        assert run.schedule.overrides.full_scale  # measured at chat's real lengths, not its small-machine fit
        command = cell_command(run, 95.0, slo_failed=True)
        assert "--full-scale" in command and "--max-input-tokens 3000" in command
        assert workload_of(command) == settings(run)


def test_the_printed_evidence_commands_of_the_h200_runs_reproduce_their_workload(tmp_path):
    runs = load(copy_runs(tmp_path))
    rec = recommend(runs, Constraints(scenario="chat", peak_rps=20, tpot_ms=21.5), load_catalog(),
                    detected=this_cpu_vm())
    assert rec.evidence is not None and rec.evidence.commands
    for command in rec.evidence.commands:
        assert workload_of(command) == settings(runs[0])


def _device_bound(d):
    d["telemetry"]["gpu"]["util_pct_mean"] = 95.0
    d["telemetry"]["cpu_percent_mean"] = 35.0


def test_what_would_settle_an_estimate_runs_the_workload_it_was_estimated_from(tmp_path):
    write_edited(tmp_path, CHAT, "dev-chat", _device_bound)
    runs, catalog = load(tmp_path), load_catalog()
    rec = recommend(runs, Constraints(scenario="chat", ttft_ms=800, peak_rps=20, budget_usd_month=20000), catalog,
                    detected=this_cpu_vm())
    lines = settle(rec.rows, rec.best, catalog, runs)
    assert lines
    for line in lines:
        command = line.split("`")[1]
        assert workload_of(command) == settings(runs[0])
    # without the run, the line asks for its flags rather than print a command for another workload
    assert all("with the workload flags of run dev-chat" in line for line in settle(rec.rows, rec.best, catalog))
