"""GPU telemetry through NVML (`pynvml`, from the `nvidia-ml-py` package).

`GpuSampler(0).sample()` reads memory used, power, the total-energy counter,
utilisation and clocks of one GPU; `summary()` reduces the samples over the
measurement window, with energy as the counter difference (never integrated
power: where the counter is unsupported, energy is None). Where NVML or a GPU
is missing, `probe()` says why and `unavailable_summary()` gives the same keys
as "n/a". Sample times are seconds since `t0_ns` (a `time.perf_counter_ns()`
value; set it to the run's t0 so windows match the run's clock; 0 means raw
perf_counter seconds). The sampling thread belongs to `advisor.telemetry`.
"""

from __future__ import annotations

import os
import time
from typing import Any

from adapters import gpus

_KEYS = ("memory_used_peak_mb", "memory_total_mb", "power_w_mean", "power_w_max", "energy_j",
         "j_per_output_token", "util_pct_mean", "sm_clock_mhz_mean", "mem_clock_mhz_mean")


def visible_device_index() -> int:
    """The NVML index of the GPU this process was given: the first of CUDA_VISIBLE_DEVICES, else 0.

    Ray, Kubernetes and schedulers hand a process its GPU through CUDA_VISIBLE_DEVICES (an index or a
    GPU-... UUID); NVML ignores that variable and counts every GPU, so the sampler must look it up.
    An index is taken as NVML's (PCI bus order, as with CUDA_DEVICE_ORDER=PCI_BUS_ID).
    """
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if not first:
        return 0
    if first.isdigit():
        return int(first)
    return next((g.index for g in gpus.list_gpus() if g.uuid.startswith(first)), 0)


class GpuSampler:
    """Samples one NVIDIA GPU; create only when `probe()` returned None."""

    def __init__(self, device_index: int = 0) -> None:
        why = self.probe(device_index)
        if why is not None:
            raise RuntimeError(f"GPU telemetry unavailable: {why}")
        nv = gpus.nvml()
        nv.nvmlInit()  # a session for the sampler's life (close() ends it)
        self.device_index = device_index
        self._nv = nv
        self._h = nv.nvmlDeviceGetHandleByIndex(device_index)
        name = nv.nvmlDeviceGetName(self._h)
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.memory_total_mb = nv.nvmlDeviceGetMemoryInfo(self._h).total / 2**20
        self.energy_supported = self._energy_mj() is not None
        self.t0_ns = 0  # clock origin of sample times and summary windows
        self.samples: list[tuple[float, dict[str, float]]] = []  # (seconds since t0_ns, values)

    @staticmethod
    def probe(device_index: int = 0) -> str | None:
        """None when NVML and the GPU are usable, else why not ("pynvml not installed", "no NVIDIA driver", "no GPU")."""
        return gpus.probe(device_index)

    @staticmethod
    def unavailable_summary(reason: str) -> dict[str, Any]:
        """The summary's keys, all None, with the reason: what a run without a GPU stores."""
        return {"gpu": f"n/a: {reason}", **{k: None for k in _KEYS}, "energy_note": f"n/a: {reason}", "n_samples": 0}

    def sample(self) -> dict[str, float]:
        """Read the GPU once; keys: memory_used_mb, power_w, util_pct, sm_clock_mhz, mem_clock_mhz, energy_mj."""
        nv, h = self._nv, self._h
        values: dict[str, float] = {"memory_used_mb": nv.nvmlDeviceGetMemoryInfo(h).used / 2**20}
        reads = {"power_w": lambda: nv.nvmlDeviceGetPowerUsage(h) / 1e3,  # milliwatts
                 "util_pct": lambda: float(nv.nvmlDeviceGetUtilizationRates(h).gpu),
                 "sm_clock_mhz": lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                 "mem_clock_mhz": lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))}
        for key, read in reads.items():
            try:
                values[key] = read()
            except nv.NVMLError_NotSupported:
                continue  # this GPU does not report it: leave the key out rather than guess
        energy = self._energy_mj() if self.energy_supported else None
        if energy is not None:
            values["energy_mj"] = energy
        self.samples.append(((time.perf_counter_ns() - self.t0_ns) / 1e9, values))
        return values

    def summary(self, n_output_tokens: int | None = None,
                window: tuple[float, float] | None = None) -> dict[str, Any]:
        """Reduce the samples inside `window` (seconds since t0_ns; all samples if None)."""
        inside = [(t, v) for t, v in self.samples if window is None or window[0] <= t <= window[1]]
        out: dict[str, Any] = {"gpu": f"cuda:{self.device_index} ({self.name})", "n_samples": len(inside),
                               "memory_total_mb": self.memory_total_mb}
        out["memory_used_peak_mb"] = _max(inside, "memory_used_mb")
        out["power_w_mean"] = _mean(inside, "power_w")
        out["power_w_max"] = _max(inside, "power_w")
        out["util_pct_mean"] = _mean(inside, "util_pct")
        out["sm_clock_mhz_mean"] = _mean(inside, "sm_clock_mhz")
        out["mem_clock_mhz_mean"] = _mean(inside, "mem_clock_mhz")
        energy_j = self._energy_j(window)
        out["energy_j"] = energy_j
        out["j_per_output_token"] = energy_j / n_output_tokens if energy_j is not None and n_output_tokens else None
        out["energy_note"] = ("NVML total-energy counter difference over the window" if energy_j is not None else
                              "n/a: this GPU has no energy counter" if not self.energy_supported else
                              "n/a: fewer than two samples in the window")
        return out

    def close(self) -> None:
        self._nv.nvmlShutdown()

    def _energy_j(self, window: tuple[float, float] | None) -> float | None:
        points = [(t, v["energy_mj"]) for t, v in self.samples if "energy_mj" in v]
        if len(points) < 2:
            return None
        if window is None:
            return (points[-1][1] - points[0][1]) / 1e3
        # a window edge outside the sampled span is clamped to it: the difference then covers
        # slightly less than the window (sample at the window's start and end to avoid that)
        start, end = _interp(points, window[0]), _interp(points, window[1])
        return max(end - start, 0.0) / 1e3

    def _energy_mj(self) -> float | None:
        try:
            return float(self._nv.nvmlDeviceGetTotalEnergyConsumption(self._h))  # mJ since the driver loaded
        except self._nv.NVMLError:  # pre-Volta GPUs and some vGPUs have no counter
            return None


def _interp(points: list[tuple[float, float]], t: float) -> float:
    """The counter at time t, linear between the samples around it, clamped to the sampled span."""
    if t <= points[0][0]:
        return points[0][1]
    for (t0, e0), (t1, e1) in zip(points, points[1:], strict=False):
        if t0 <= t <= t1:
            return e0 if t1 == t0 else e0 + (e1 - e0) * (t - t0) / (t1 - t0)
    return points[-1][1]


def _mean(samples: list[tuple[float, dict[str, float]]], key: str) -> float | None:
    vals = [v[key] for _, v in samples if key in v]
    return sum(vals) / len(vals) if vals else None


def _max(samples: list[tuple[float, dict[str, float]]], key: str) -> float | None:
    vals = [v[key] for _, v in samples if key in v]
    return max(vals) if vals else None
