"""The client's run-queue wait (advisor.loadgen.cpu_wait) against the kernel's ground truth: a thread that
shares its only CPU with a spinning process waits about half the time, one alone hardly at all; every send of
a run carries its wait, and the lag check names the late sends that wait explains."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import threading
import time
from pathlib import Path

import pytest

from advisor.loadgen import cpu_wait
from advisor.loadgen.drive import drive
from advisor.metrics.lag import check_lag
from tests.advisor.loadgen.test_drive import FakeAdapter, _schedule, _specs

LINUX = Path("/proc/thread-self/schedstat").exists()
needs_schedstat = pytest.mark.skipif(not LINUX, reason="needs /proc/thread-self/schedstat (Linux)")


def _spin(cpu: int, seconds: float) -> None:
    os.sched_setaffinity(0, {cpu})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _busy_on(cpu: int, seconds: float) -> tuple[int, float]:
    """Spin `seconds` on `cpu` in a new thread; its run-queue wait (ns) and wall time (s)."""
    out: list[tuple[int, float]] = []

    def run() -> None:
        os.sched_setaffinity(0, {cpu})
        cpu_wait.mark()
        t = time.monotonic()
        while time.monotonic() - t < seconds:
            pass
        out.append((cpu_wait.since_mark(), time.monotonic() - t))
        cpu_wait.close()

    th = threading.Thread(target=run)
    th.start()
    th.join()
    return out[0]


@needs_schedstat
def test_a_thread_sharing_its_cpu_with_a_spinner_waits_about_half_the_time_and_alone_hardly_at_all():
    cpu = sorted(os.sched_getaffinity(0))[-1]
    alone_ns, alone_s = _busy_on(cpu, 0.4)
    spinner = mp.get_context("fork").Process(target=_spin, args=(cpu, 3.0), daemon=True)
    spinner.start()
    try:
        time.sleep(0.2)  # the spinner holds the CPU before the thread starts
        shared_ns, shared_s = _busy_on(cpu, 0.8)
    finally:
        spinner.terminate()
        spinner.join()
    assert 0 <= alone_ns < 0.2 * alone_s * 1e9
    # two CPU-bound tasks on one CPU: the scheduler gives each about half (the bounds only catch gross errors)
    assert 0.25 * shared_s * 1e9 < shared_ns < 0.75 * shared_s * 1e9


@needs_schedstat
def test_the_count_is_per_thread():
    cpu_wait.mark()
    seen: list[int | None] = []
    th = threading.Thread(target=lambda: (seen.append(cpu_wait.since_mark()), cpu_wait.close()))
    th.start()
    th.join()
    assert seen == [None]  # a thread that never marked has no window of its own
    assert cpu_wait.since_mark() is not None


@needs_schedstat
def test_a_forked_child_reads_its_own_thread_not_its_parents():
    cpu_wait.mark()  # the parent's file is open
    parent_tid = threading.get_native_id()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its reading must name its own thread
        try:
            cpu_wait.run_delay_ns()
            path = os.readlink(f"/proc/self/fd/{cpu_wait._local.fd}")
            os.write(w, path.encode())
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    path = os.read(r, 4096).decode()
    os.close(r)
    assert path.endswith(f"/task/{pid}/schedstat") and f"/task/{parent_tid}/" not in path


def test_without_the_file_every_reading_is_none(monkeypatch):
    monkeypatch.setattr(cpu_wait, "_PATH", "/nonexistent/schedstat")
    th_out: list[object] = []

    def run() -> None:
        cpu_wait.mark()
        th_out.append(cpu_wait.since_mark())
        th_out.append(cpu_wait.run_delay_ns())
        cpu_wait.close()

    th = threading.Thread(target=run)  # a fresh thread: the main thread's file may be open already
    th.start()
    th.join()
    assert th_out == [None, None]


@needs_schedstat
def test_every_send_of_a_run_carries_its_wait():
    sched = _schedule("open", [i * 0.01 for i in range(20)], n_out=2)
    adapter = FakeAdapter(ttft_ms=5, tpot_ms=5)
    adapter.start()
    res = asyncio.run(drive(adapter, sched, _specs(sched)))
    waits = [r.client_wait_ns for r in res.records]
    assert all(w is not None and w >= 0 for w in waits)


def test_the_lag_check_counts_the_late_sends_the_wait_explains():
    # limit 5 ms: 9 and 12 ms are late; 9 - 6 = 3 is within it (the wait explains it), 12 - 2 = 10 is not
    lags = [0.5, 1.0, 9.0, 12.0] + [0.3] * 96
    check = check_lag(lags, None, None, [0.0, 0.2, 6.0, 2.0] + [0.0] * 96)
    assert (check.n_late, check.n_late_waited) == (2, 1)
    assert check.ok  # 2 of 100 is within what 1% late could explain: the reason is not shown at all
    late = check_lag([9.0] * 10 + [0.3] * 90, None, None, [6.0] * 5 + [None] * 95)
    assert not late.ok and late.n_late_waited == 5
    assert "5 of the 10 late sends waited that long for the client's CPU" in late.reason()
    none = check_lag([9.0] * 10 + [0.3] * 90, None, None, [0.0] * 100)
    assert none.n_late_waited == 0 and "None of the late sends is explained" in none.reason()
    unknown = check_lag([9.0] * 10 + [0.3] * 90, None, None, [None] * 100)
    assert unknown.n_late_waited is None and "run-queue" not in unknown.reason()
    assert check_lag([9.0] * 10 + [0.3] * 90, None, None).n_late_waited is None
