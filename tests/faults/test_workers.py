"""A load-generator worker that dies mid-run, in a real `advisor bench --workers 2` process."""

from __future__ import annotations

import json

import psutil
import pytest

from advisor.saved.store import load_run
from tests.faults.conftest import advisor_bg, wait_for, write_scenario

pytestmark = pytest.mark.faults


def _workers(proc) -> list[psutil.Process]:
    return [c for c in psutil.Process(proc.pid).children() if "advisor.loadgen.worker_process" in " ".join(c.cmdline())]


def test_a_worker_killed_mid_run_loses_only_its_own_unfinished_requests(fault_server, tmp_path):
    server = fault_server(tpot_ms=25)  # 8 tokens: ~0.2 s a request, so a few are always in flight
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=5.0, rate_rps=12.0, warmup_s=0.5, n_out=8)
    proc = advisor_bg("bench", "--scenario", str(scenario), "--engine", "openai", "--url", server.url,
                      "--workers", "2", "--out", str(tmp_path / "runs"), "--json")
    wait_for(lambda: server.log.exists() and len(server.requests()) >= 20 and len(_workers(proc)) == 2,
             what="both workers to be sending")
    victim = _workers(proc)[0]
    victim.kill()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    [dead] = [w for w in doc["loadgen"]["workers"] if w["pid"] == victim.pid]
    [alive] = [w for w in doc["loadgen"]["workers"] if w["pid"] != victim.pid]
    assert dead["exit"] == "died (exit code -9)" and alive["exit"] == "done"
    records = load_run(doc["path"]).records()
    theirs = [r for r in records if r.worker == dead["worker"]]
    ours = [r for r in records if r.worker == alive["worker"]]
    assert ours and all(r.ok for r in ours)  # the other worker's run is whole
    assert any(r.ok for r in theirs)  # what the dead worker finished before it died is kept
    lost = [r for r in theirs if not r.ok]
    assert lost and {r.error_kind for r in lost} == {"worker"}
    assert any("died (exit code -9) while this request was due or in flight" in r.error for r in lost)
    assert any(r.error.startswith("never sent: load-generator worker") for r in lost)  # its later ones
    assert doc["summary"]["errors_by_kind"].get("worker", 0) >= 1


def test_ctrl_c_while_the_workers_start_exits_130_at_once_and_saves(fault_server, tmp_path):
    """The terminal's Ctrl-C goes to the whole process group: the workers must not die of it mid-import (that
    ended as 'worker N exited while starting', exit 1, nothing saved); the driver stops them and saves."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.faults.conftest import ROOT, run_dirs

    server = fault_server()
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=5.0)
    proc = subprocess.Popen([sys.executable, "-c", "from advisor_cli import main; main()", "bench", "--scenario",
                             str(scenario), "--engine", "openai", "--url", server.url, "--workers", "2", "--out",
                             str(tmp_path / "runs")], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    wait_for(lambda: len(_workers(proc)) == 2, what="the workers to be started")
    t = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and time.monotonic() - t < 10, err
    assert "exited while starting" not in err and "KeyboardInterrupt" not in err, err
    assert len(run_dirs(tmp_path / "runs")) == 1
