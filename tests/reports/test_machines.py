"""The Environment section: one machine per fingerprint, whatever each run set for itself on it."""

from __future__ import annotations

import copy
import re
from typing import Any

from advisor.saved.store import RunResult
from reports.costs import price_runs
from reports.html import render_report
from reports.machines import machine_title, machines
from tests.advisor.recommend.h200 import CHAT, CLOSED, SATURATED, raw

FP = {"machine_id_sha256": "cd" * 32, "gpu_uuids": ["GPU-1"], "cpu_model": "Intel(R) Xeon(R) Processor",
      "cpu_cores": 16, "mem_gb": 135, "gpus": [{"name": "NVIDIA H200", "memory_gb": 150.754820096}]}


def _run(src: str, **hardware: Any) -> RunResult:
    d = copy.deepcopy(raw(src))
    d["manifest"]["fingerprint"] = dict(FP)
    d["manifest"]["hardware"].update(hardware)
    return RunResult.from_dict(d)


def _labels(runs: list[RunResult]) -> dict[str, str]:
    return {r.run_id: r.run_id for r in runs}


def test_runs_on_one_machine_at_different_cpu_affinities_are_one_machine():
    runs = [_run(CHAT, cpu_affinity=1), _run(SATURATED, cpu_affinity=4, cpu_idle="driver=none"),
            _run(CLOSED, cpu_affinity=16)]
    [m] = machines(runs, _labels(runs))
    assert m["runs"] == [CHAT, SATURATED, CLOSED]
    assert m["title"] == "vm: Intel(R) Xeon(R) Processor, 16 cores, 135 GB, 1 x NVIDIA H200"
    assert "cpu_affinity" not in m["hardware"] and m["hardware"]["cpu_cores"] == 16
    differs = {d["name"]: d["values"] for d in m["differs"]}
    assert [(v["value"], v["runs"]) for v in differs["cpu_affinity"]] == [(1, [CHAT]), (4, [SATURATED]), (16, [CLOSED])]
    assert [(v["value"], v["runs"]) for v in differs["cpu_idle"]] == [(None, [CHAT, CLOSED]), ("driver=none", [SATURATED])]


def test_another_machine_with_the_same_hostname_is_its_own_machine_and_says_how_it_differs():
    cpu_vm = copy.deepcopy(raw(CHAT))
    cpu_vm["run_id"] = "cpu-run"
    cpu_vm["manifest"]["hardware"].update(cpu_cores=2, mem_gb=8.2, gpus=[])
    cpu_vm["manifest"]["fingerprint"] = {**FP, "machine_id_sha256": "ef" * 32, "cpu_cores": 2, "mem_gb": 8, "gpus": []}
    runs = [_run(CHAT), RunResult.from_dict(cpu_vm), _run(SATURATED, cpu_affinity=2)]
    found = machines(runs, _labels(runs))
    assert [m["runs"] for m in found] == [[CHAT, SATURATED], ["cpu-run"]]
    assert found[1]["title"] == "vm: Intel(R) Xeon(R) Processor, 2 cores, 8 GB, no GPU"
    assert found[0]["machine_id"] == "cd" * 6


def test_runs_saved_before_fingerprints_are_grouped_by_their_hardware():
    runs = []
    for src, affinity in ((CHAT, 1), (SATURATED, 8)):
        d = copy.deepcopy(raw(src))
        d["manifest"]["hardware"]["cpu_affinity"] = affinity
        d["manifest"]["software"]["packages"]["torch"] = "2.12.0" if affinity == 8 else "2.11.0"
        runs.append(RunResult.from_dict(d))
    [m] = machines(runs, _labels(runs))
    assert {d["name"] for d in m["differs"]} == {"cpu_affinity", "package torch"}
    assert "torch" not in m["packages"] and m["packages"]["numpy"] == "2.5.2"


def test_machine_title_counts_gpus_of_one_kind():
    manifest = {"hostname": "box", "hardware": {"cpu_model": "EPYC", "cpu_cores": 64, "mem_gb": 512.4,
                                                "gpus": [{"name": "NVIDIA H100"}] * 8}}
    assert machine_title(manifest) == "box: EPYC, 64 cores, 512 GB, 8 x NVIDIA H100"


def test_the_report_has_one_environment_heading_per_machine():
    runs = [_run(CHAT, cpu_affinity=1), _run(SATURATED, cpu_affinity=4), _run(CLOSED, cpu_affinity=16)]
    page = render_report(runs, prices=price_runs(runs, usd_per_hour=2.0))
    env = page.split('<section id="environment">')[1]
    assert re.findall(r"<h3>Machine (.*?)</h3>", env) == [
        "vm: Intel(R) Xeon(R) Processor, 16 cores, 135 GB, 1 x NVIDIA H200"]
    assert "Set by each run on this machine" in env and "<th rowspan=\"3\">cpu_affinity</th>" in env
