"""One redaction for every file advisor writes: planted secrets appear in none of them.

A sweep and a matrix against a launched fault server, with `--url http://user:PASSWORD@...` and a
`--launch` line carrying `HF_TOKEN=...` and `--api-key sk-...` (which the server prints into its own
log, copied into each run folder); then a report. Every file under --out, and the report, is searched
byte for byte.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.faults.conftest import advisor, write_scenario
from tests.servers.mock_openai import free_port

pytestmark = pytest.mark.faults

PASSWORD = "PLANTEDpassw0rd"
HF_TOKEN = "hf_PLANTEDtoken123456"
API_KEY = "sk-PLANTEDkey987654"
SECRETS = (PASSWORD, HF_TOKEN, API_KEY)


def _leaks(*roots: Path) -> list[str]:
    out = []
    for p in sorted(f for root in roots for f in ([root] if root.is_file() else root.rglob("*"))):
        if p.is_file():
            data = p.read_bytes()
            out += [f"{p}: {s}" for s in SECRETS if s.encode() in data]
    return out


def _target(tmp_path: Path) -> tuple[str, str]:
    port = free_port()
    server = shlex.join([sys.executable, "-m", "tests.faults.server", "--port", str(port), "--tpot-ms", "2",
                         "--api-key", API_KEY])
    return f"http://user:{PASSWORD}@127.0.0.1:{port}", f"HF_TOKEN={HF_TOKEN} {server}"


def test_no_planted_secret_in_any_file_advisor_writes(tmp_path):
    out = tmp_path / "runs"
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=1.0, warmup_s=0.2, rate_rps=4.0, n_out=4)
    url, launch = _target(tmp_path)
    res = advisor("sweep", "--scenario", str(scenario), "--engine", "openai", "--url", url, "--launch", launch,
                  "--rates", "2,4", "--out", str(out))
    assert res.returncode in (0, 3), res.stderr
    assert list(out.glob("*/sweep.json")) and list(out.glob("*/server.log"))
    url, launch = _target(tmp_path)
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"""name: secrets
defaults: {{scenario: {scenario}, duration: 1, warmup: 0.2}}
cells:
  - name: served
    engine: openai
    options: {{url: "{url}", launch: "{launch.replace('"', '')}"}}
    rate: 4
""")
    res = advisor("matrix", str(plan), "--out", str(out), timeout=300)
    assert res.returncode in (0, 3), res.stderr
    assert list(out.glob("*/matrix.json"))
    report = tmp_path / "report.html"
    res = advisor("report", "--runs", str(out), "-o", str(report))
    assert res.returncode == 0, res.stderr
    leaks = _leaks(out, report)
    assert not leaks, leaks
