"""Memory figures are 2^20-byte units (psutil and NVML bytes / 2**20): the console says MiB, not MB (report: test_html)."""

from __future__ import annotations

from click.testing import CliRunner

from advisor_cli import cli
from tests.advisor.recommend.runs import make_run, write_runs


def _run() -> dict:
    run = make_run("r1")
    run["telemetry"] = {"rss_peak_mb": 306.0, "rss_steady_mb": 297.0,
                        "gpu": {"memory_used_peak_mb": 70000.0, "power_w_mean": 300.0}}
    return run


def test_console_says_mib(tmp_path):
    root = write_runs(tmp_path / "runs", [_run()])
    out = " ".join(CliRunner().invoke(cli, ["show", "r1", "--runs", str(root)]).output.split())
    assert "peak 306 MiB, steady 297 MiB" in out and "70,000 MiB peak" in out and " MB" not in out

