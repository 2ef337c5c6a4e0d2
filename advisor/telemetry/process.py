"""Host-side telemetry of the engine process: resident memory and CPU, via psutil.

Sampled sparingly (default once a second): on a 2-core machine even a 10 ms
poller costs measurable decode speed (ENGINE_NOTES). The kernel's own peak
(VmHWM) is read too, so a short spike between samples is not missed.
"""

from __future__ import annotations

import os

import psutil


def _children_rss(proc: psutil.Process) -> int:
    total = 0
    for child in proc.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:  # a child that exited between listing and reading
            continue
    return total


class ProcessSampler:
    """RSS (the process and its children) and CPU% of one process."""

    def __init__(self, pid: int | None = None) -> None:
        self.pid = pid or os.getpid()
        self.proc = psutil.Process(self.pid)
        self.proc.cpu_percent(None)  # prime: the first call always returns 0.0

    def sample(self) -> dict[str, float]:
        try:
            rss = self.proc.memory_info().rss + _children_rss(self.proc)
            cpu = self.proc.cpu_percent(None)
        except psutil.Error:  # the engine process is gone: nothing more to read
            return {}
        return {"rss_mb": rss / 2**20, "cpu_percent": cpu}

    def peak_rss_mb(self) -> float | None:
        """The kernel's high-water mark of resident memory since the process started (Linux)."""
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None
