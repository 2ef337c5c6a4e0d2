"""`advisor dashboard` serves the packaged app (no app.py needed) and stops cleanly on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psutil
import pytest

from adapters.launch import http_ok
from tests.servers.mock_openai import free_port

pytest.importorskip("streamlit")


def test_dashboard_command_serves_the_packaged_app_and_stops_on_ctrl_c(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", "from advisor_cli import main; main()", "dashboard", "--runs",
                             str(tmp_path), "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path)  # not the checkout: the app must come from the package
    try:
        deadline = time.monotonic() + 90
        while not http_ok(f"http://127.0.0.1:{port}/_stcore/health"):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the dashboard did not come up"
            time.sleep(0.5)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert any("reports/dashboard/app.py" in " ".join(c.cmdline()) for c in children)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130 and "interrupted by SIGINT" in err
        _, alive = psutil.wait_procs(children, timeout=30)
        assert not alive, f"streamlit outlived advisor: {alive}"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_dashboard_needs_its_extra_and_says_so(monkeypatch):
    import importlib.util

    from click.testing import CliRunner

    from advisor_cli import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "streamlit" else real(n, *a))
    res = CliRunner().invoke(cli, ["dashboard"])
    assert res.exit_code == 1 and "pip install 'inference-advisor[dashboard]'" in res.output
