"""How long the sending thread waited for its CPU behind other tasks: the kernel's own count, per send.

Linux keeps, per thread, the time it spent runnable but not running (the second field of
/proc/thread-self/schedstat, "run_delay", in ns). The send loops mark that count when they start to wait for
a send and take it again at the send; the difference is `RequestRecord.client_wait_ns`, the time in that
window the client was ready to run while another task held its CPU. A late send whose lag minus that wait is
within the lag limit was made late by the machine, not by the load generator's own work (advisor.metrics.lag
counts them; docs/metrics.md, "The send-lag rule").

One `pread` of an open file per reading (~0.5 us on the CI VM). The file is opened per thread, on first use in
it: /proc/thread-self names the thread that opens it (and a forked child opens its own). Where the file does
not exist (not Linux, or a kernel without schedstats) every reading is None and so is every record's wait.
"""

from __future__ import annotations

import os
import threading

_PATH = "/proc/thread-self/schedstat"
_local = threading.local()


def _fd() -> int | None:
    fd = getattr(_local, "fd", -1)
    if fd != -1 and getattr(_local, "pid", None) != os.getpid():
        # a forked child inherits the file, which still names its parent's thread: open its own
        _local.fd = fd = -1
        _local.mark = None
    if fd == -1:
        try:
            fd = os.open(_PATH, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            fd = None
        _local.fd, _local.pid = fd, os.getpid()
    return fd


def run_delay_ns() -> int | None:
    """This thread's run-queue time so far (ns), or None where the kernel does not say."""
    fd = _fd()
    if fd is None:
        return None
    try:
        return int(os.pread(fd, 96, 0).split()[1])
    except (OSError, ValueError, IndexError):
        return None


def mark() -> None:
    """The send loop starts to wait: waits are counted from here."""
    _local.mark = run_delay_ns()


def since_mark() -> int | None:
    """Run-queue time since the last mark (or since the previous call), and a new mark at now."""
    now = run_delay_ns()
    before = getattr(_local, "mark", None)
    _local.mark = now
    if now is None or before is None:
        return None
    return now - before


def close() -> None:
    """Close this thread's file (a driver thread that ends)."""
    fd = getattr(_local, "fd", -1)
    if fd not in (-1, None):
        os.close(fd)
    _local.fd = -1
    _local.mark = None
