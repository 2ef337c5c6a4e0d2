"""Fixtures for the fault tests: a misbehaving server in its own process, real `advisor` processes, scenarios."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from adapters.launch import http_ok
from tests.adapters.formats.models import tiny_model
from tests.servers.mock_openai import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Server:
    url: str
    port: int
    log: Path
    proc: subprocess.Popen

    def requests(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def server_command(port: int, log: Path, **opts: object) -> list[str]:
    cmd = [sys.executable, "-m", "tests.faults.server", "--port", str(port), "--log", str(log)]
    for k, v in opts.items():
        cmd += [f"--{k.replace('_', '-')}", str(v)]
    return cmd


@pytest.fixture()
def fault_server(tmp_path) -> Iterator:
    """A factory: `fault_server(tokens_per_chunk=4, usage="final", ...)` starts one (stopped at the end)."""
    started: list[subprocess.Popen] = []

    def start(**opts: object) -> Server:
        port = free_port()
        log = tmp_path / f"server-{port}.jsonl"
        proc = subprocess.Popen(server_command(port, log, **opts), cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        started.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while not http_ok(url + "/health"):
            assert proc.poll() is None and time.monotonic() < deadline, "fault server did not start"
            time.sleep(0.1)
        return Server(url, port, log, proc)

    yield start
    for p in started:
        if p.poll() is None:
            p.kill()
        p.wait()


@pytest.fixture(scope="session")
def model_dir() -> str:
    return str(tiny_model())


def write_scenario(path: Path, *, rate_rps: float = 4.0, duration_s: float = 6.0, warmup_s: float = 1.0,
                   n_in: int = 16, n_out: int = 24, name: str = "faults") -> Path:
    path.write_text(f"""name: {name}
description: A short steady stream of equal requests for the fault tests (no calibration).
workload:
  input: {{dist: fixed, value: {n_in}}}
  output: {{dist: fixed, value: {n_out}}}
arrival: {{process: constant, rate_rps: {rate_rps}}}
duration_s: {duration_s}
warmup_s: {warmup_s}
slos: {{ttft_ms: 1000, tpot_ms: 100}}
""")
    return path


def advisor(*args: str, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """A real `advisor` process (the console entry point), run to the end."""
    return subprocess.run([sys.executable, "-c", "from advisor_cli import main; main()", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


def advisor_bg(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    """A real `advisor` process in the background (to signal it)."""
    return subprocess.Popen([sys.executable, "-c", "from advisor_cli import main; main()", *args], cwd=cwd or ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(predicate, timeout_s: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def interrupt(proc: subprocess.Popen, sig: signal.Signals, timeout_s: float = 60) -> tuple[int, str, str]:
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=timeout_s)
    return proc.returncode, out, err


def run_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/result.json"))
