"""`sweep --resume` takes the sweep's lock: a second advisor on the same sweep is refused before it starts."""

from __future__ import annotations

import json
import signal

import pytest

from advisor.sweep.run import check_unlocked
from tests.faults.conftest import advisor, advisor_bg, interrupt, wait_for, write_scenario

pytestmark = pytest.mark.faults


def test_a_sweep_that_is_running_cannot_be_resumed_twice(fault_server, tmp_path):
    server = fault_server(tpot_ms=2)
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=30.0, rate_rps=2.0, warmup_s=0.0, n_out=4)
    out = tmp_path / "runs"
    proc = advisor_bg("sweep", "--scenario", str(scenario), "--engine", "openai", "--url", server.url,
                      "--rates", "2,4", "--out", str(out))
    try:
        wait_for(lambda: bool(list(out.glob("*/sweep.json"))), what="the sweep to start")
        [sweep_file] = out.glob("*/sweep.json")
        sweep_id = json.loads(sweep_file.read_text())["sweep_id"]
        res = advisor("sweep", "--resume", sweep_id, "--out", str(out))
        assert res.returncode != 0
        assert f"sweep {sweep_id} is running in another advisor (pid {proc.pid})" in res.stderr, res.stderr
    finally:
        rc, _, err = interrupt(proc, signal.SIGINT)
    assert rc == 130, err
    check_unlocked(sweep_file.parent)  # the lock went with the process: a resume may go on now
