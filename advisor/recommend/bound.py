"""Was a run limited by its device (the GPU) or by the host (the engine's CPU-side loop)? From its telemetry.

The rule (stated in docs/recommend.md): a GPU run is **host-bound** when the engine process used at
least HOST_CPU_BUSY_PCT of one CPU core on average while the GPU was busy less than GPU_BUSY_PCT of
the time, and (where the model shape allows the roofline) its decode step took more than
1 / MAX_DEVICE_EFFICIENCY_HOST_BOUND times the roofline's ideal step. It is **device-bound** when
the GPU was busy at least GPU_BUSY_PCT of the time. Anything else (no GPU telemetry, or a GPU and
a host both partly idle: too little load to say) is **unclear**. A CPU run has no separate device:
its host *is* the device (`cpu`). Only device-bound and CPU runs calibrate device efficiency for
other hardware: on a host-bound run a faster GPU is not faster, and a roofline calibrated on it
would say it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from advisor.catalog.models import Hardware
from advisor.saved.store import RunResult
from advisor.sizing.roofline import calibrate
from fileform import FileForm

HOST_CPU_BUSY_PCT = 80.0  # % of ONE core: a single-threaded engine loop at this level is almost never waiting
GPU_BUSY_PCT = 70.0  # NVML utilisation: share of time a kernel was running on the GPU
MAX_DEVICE_EFFICIENCY_HOST_BOUND = 0.5  # decode step at under half the roofline ideal speed: far from the device's limit

Bound = Literal["device-bound", "host-bound", "unclear", "cpu"]
HOST_PATH = "the engine's host path, not the GPU"


@dataclass(frozen=True)
class Boundness(FileForm):
    bound: Bound
    reason: str  # one line, with the figures the rule used
    gpu_util_pct: float | None = None
    engine_cpu_pct: float | None = None  # % of one core, engine process
    decode_efficiency: float | None = None  # roofline ideal decode step / measured (1.0 = at the device's peak)

    @property
    def calibrates_device(self) -> bool:
        """Its speed says something about the device, so it may calibrate estimates for other hardware."""
        return self.bound in ("device-bound", "cpu")


def classify(run: RunResult, hw: Hardware | None) -> Boundness:
    """Device-bound, host-bound, unclear, or a CPU run (see the module docstring for the rule)."""
    gpu = run.telemetry.gpu or {}
    if hw is not None and hw.kind == "cpu" and not gpu:
        return Boundness("cpu", "a CPU run: the host is the device")
    util, cpu = gpu.get("util_pct_mean"), run.telemetry.cpu_percent_mean
    eff = None
    if hw is not None and hw.peak_tflops(2) is not None:
        e = calibrate([(run, hw)])
        eff = None if e is None else e.decode
    figures = ", ".join(x for x in (
        f"GPU busy {util:.0f}% of the time" if util is not None else "",
        f"engine process at {cpu:.0f}% of one CPU core" if cpu is not None else "",
        f"decode step at {eff:.0%} of the roofline's ideal speed" if eff is not None else "") if x)
    if util is None:
        return Boundness("unclear", "no GPU utilisation in the run's telemetry: cannot tell whether the GPU was the "
                         "limit", None, cpu, eff)
    if util >= GPU_BUSY_PCT:
        return Boundness("device-bound", f"device-bound: {figures}", util, cpu, eff)
    slow = eff is None or eff < MAX_DEVICE_EFFICIENCY_HOST_BOUND
    if cpu is not None and cpu >= HOST_CPU_BUSY_PCT and slow:
        return Boundness("host-bound", f"host-bound ({figures}): it measured {HOST_PATH}", util, cpu, eff)
    return Boundness("unclear", f"neither device- nor host-bound ({figures}): too little load to tell", util, cpu, eff)
