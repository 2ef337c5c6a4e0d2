"""benchmarks/machine_noise.py: its timing loop's figures hold together, a spinner it starts really holds the
engine's CPU, and a wrong CPU gets one clear line before anything is measured."""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not Path("/proc/thread-self/schedstat").exists(), reason="Linux /proc only")


def _module():
    spec = importlib.util.spec_from_file_location("machine_noise", ROOT / "benchmarks" / "machine_noise.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_timing_loop_runs_its_length_and_its_figures_agree():
    mod = _module()
    cpu = sorted(os.sched_getaffinity(0))[0]
    before = os.sched_getaffinity(0)
    t = time.monotonic()
    r = mod.timing_loop(cpu, 0.3)
    assert 0.3 <= time.monotonic() - t < 3
    assert os.sched_getaffinity(0) == before  # its pin is undone
    assert r["gaps_over_1ms"] >= r["gaps_over_2ms"] >= r["gaps_over_5ms"] >= 0
    assert r["gap_total_ms"] >= r["gap_max_ms"] >= 0
    assert r["gap_total_ms"] <= 300  # the gaps are inside the loop's own 0.3 s
    assert r["runq_wait_ms"] >= 0


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_busy_phase_spins_on_the_engine_cpu_and_names_the_other_tasks(capsys):
    mod = _module()
    cpus = sorted(os.sched_getaffinity(0))
    assert mod.main(["--seconds", "0.4", "--client-cpu", str(cpus[0]), "--engine-cpu", str(cpus[-1]), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    idle, busy = doc["phases"]
    assert (idle["phase"], idle["engine_cpu"]) == ("engine idle", None)
    assert (busy["phase"], busy["engine_cpu"]) == ("engine busy", cpus[-1])
    assert idle["engine_spinner_cpu_ms"] is None
    assert busy["engine_spinner_cpu_ms"] >= 0.5 * 400  # the stand-in engine held its CPU for most of the phase
    for p in (idle, busy):
        assert p["client_cpu"] == cpus[0]
        assert all(t["cpu_ms"] >= 0.1 and t["pid"] != os.getpid() for t in p["other_tasks"])


def test_a_cpu_this_process_cannot_use_is_one_line_and_exit_2(capsys):
    mod = _module()
    assert mod.main(["--client-cpu", "4096", "--seconds", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CPU 4096" in err[0] and "--client-cpu" in err[0]
