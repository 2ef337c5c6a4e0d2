"""`advisor selftest --device cpu --quick` for real, as a user runs it: every check, exit status 0, both documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_selftest_on_cpu_passes_and_writes_both_documents(tmp_path):
    out = tmp_path / "st"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", "from advisor_cli import main; main()", "selftest", "--device", "cpu",
                           "--quick", "--out", str(out)], capture_output=True, text=True, timeout=1200, env=env)
    doc = json.loads((out / "selftest.json").read_text())
    assert proc.returncode == 0, (proc.stderr[-3000:], doc["failed"])
    assert doc["passed"] is True and doc["device"] == "cpu"
    by = {c["name"]: c for c in doc["checks"]}
    assert list(by) == ["nvml", "greedy:tiny", "greedy:small-100m", "step", "served", "batching"]
    assert by["nvml"]["status"] == "n/a"
    assert by["greedy:tiny"]["status"] == by["greedy:small-100m"]["status"] == "pass"
    assert by["served"]["status"] == "pass" and by["served"]["figures"]["telemetry_samples"] >= 1
    assert by["step"]["figures"]["decode"][0]["step_ms"] > 0
    assert by["batching"]["status"] in ("pass", "warn")
    assert (out / "selftest.html").read_text().count("<tr>") == 7  # header + six checks
    assert "every check passed" in proc.stderr
