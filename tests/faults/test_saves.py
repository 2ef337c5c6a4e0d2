"""A run is saved exactly once, whatever happens: a second and a third Ctrl-C, a full disk, a killed save.

Real `advisor bench` processes on the in-process fake engine at 1,000 req/s (thousands of records, so
the save takes a moment), signalled at 0.1-0.3 s gaps; a 200 KB tmpfs as --out for the full disk.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from advisor.saved.store import load_run
from tests.faults.conftest import advisor, advisor_bg, run_dirs

pytestmark = pytest.mark.faults

FAKE = ("--engine", "fake", "--opt", "ttft_ms=2", "--opt", "tpot_ms=1")


def _scenario(path: Path, duration_s: float = 60.0) -> Path:
    path.write_text(f"""name: faults
description: A fast steady stream of equal requests for the save tests (no calibration).
workload:
  input: {{dist: fixed, value: 16}}
  output: {{dist: fixed, value: 8}}
arrival: {{process: constant, rate_rps: 1000}}
duration_s: {duration_s}
warmup_s: 0
slos: {{ttft_ms: 1000, tpot_ms: 100}}
""")
    return path


def _debris(out: Path) -> list[str]:
    return [str(p.relative_to(out)) for p in out.rglob("*") if ".saving-" in p.name or p.name.endswith(".tmp")]


def _signals(proc: subprocess.Popen, gaps_s: tuple[float, ...]) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    for gap in gaps_s:
        time.sleep(gap)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def _start(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / "runs"
    proc = advisor_bg("bench", "--scenario", str(_scenario(tmp_path / "s.yaml")), *FAKE, "--out", str(out))
    time.sleep(6.0)  # the engine starts, and a few thousand requests are measured
    assert proc.poll() is None, proc.communicate()
    return proc, out


@pytest.mark.parametrize("gap_s", [0.1, 0.3])
def test_a_second_ctrl_c_waits_for_the_save(tmp_path, gap_s):
    proc, out = _start(tmp_path)
    rc, err = _signals(proc, (gap_s,))
    assert rc == 130, err
    [folder] = run_dirs(out)
    assert f"partial run saved: {folder}" in err
    run = load_run(folder)
    assert run.verdict.status == "INVALID" and len(run.records()) > 1000
    assert not _debris(out)


@pytest.mark.parametrize("gap_s", [0.1, 0.2, 0.3])
def test_a_third_ctrl_c_either_finds_the_run_saved_or_says_the_save_was_dropped(tmp_path, gap_s):
    proc, out = _start(tmp_path)
    rc, err = _signals(proc, (gap_s, gap_s))
    assert rc == 130, err
    folders = run_dirs(out)
    if "the save of the run was dropped" in err:
        assert "nothing of it was written" in err and not folders
        assert not out.exists() or not any(out.iterdir()), list(out.iterdir())  # no half-saved folder either
    else:
        [folder] = folders
        assert f"partial run saved: {folder}" in err
        load_run(folder).records()
    assert not _debris(out)


@pytest.fixture()
def full_disk(tmp_path):
    """A 200 KB tmpfs (root only), 170 KB of it taken by a `filler` file: the write check passes, the run does not."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mnt)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
    (mnt / "filler").write_bytes(b"x" * 170_000)
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.parametrize("as_json", [False, True])
def test_a_full_disk_still_prints_the_whole_summary_and_says_what_was_not_written(tmp_path, full_disk, as_json):
    scenario = _scenario(tmp_path / "s.yaml", duration_s=2.0)
    res = advisor("bench", "--scenario", str(scenario), *FAKE, "--out", str(full_disk),
                  *(("--json",) if as_json else ()))
    assert res.returncode == 1, (res.stdout[-500:], res.stderr)
    assert "the run could not be saved: No space left on device" in res.stderr
    assert "requests.parquet, result.json not written" in res.stderr and "nothing of it was left behind" in res.stderr
    if as_json:
        doc = json.loads(res.stdout)
        assert doc["path"] is None and doc["summary"]["n_requests"] > 1000 and doc["verdict"]["status"]
    else:
        assert "verdict" in res.stdout.lower() and "ttft" in res.stdout.lower()
    left = [p.name for p in full_disk.iterdir()]
    assert left == ["filler"], left  # no debris, not even an empty folder


def test_report_and_show_warn_about_an_unfinished_run_folder(tmp_path):
    out = tmp_path / "runs"
    res = advisor("bench", "--scenario", str(_scenario(tmp_path / "s.yaml", duration_s=0.5)), *FAKE, "--out",
                  str(out))
    assert res.returncode in (0, 3), res.stderr
    [good] = run_dirs(out)
    half = out / "20260101-000000-faults-fake-dead"  # a process killed mid-save, before the atomic saves
    half.mkdir()
    shutil.copyfile(good / "requests.parquet", half / "requests.parquet")
    (half / "result.json.tmp").write_text("{")
    res = advisor("report", "--runs", str(out), "-o", str(tmp_path / "r.html"))
    assert res.returncode == 0, res.stderr
    assert f"warning: unfinished run folder {half}" in res.stderr
    res = advisor("show", str(half))
    assert f"warning: unfinished run folder {half}" in res.stderr
