"""Which catalog hardware a machine is: detect this one, or map a run's recorded manifest.

GPUs are matched by name (pynvml, when installed: its absence is normal); CPUs by model
string, or by core count for small VMs; anything else becomes a "custom" entry whose
memory bandwidth is measured here with a numpy copy (median of a few passes).
This measures only bandwidth: peak FLOPS of a custom CPU is left unknown.
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from advisor import manifest
from advisor.catalog import Catalog, Hardware

CUSTOM_ID = "custom"


def measure_memory_bandwidth_gbps(size_mb: int = 256, repeats: int = 5) -> float:
    """Copy bandwidth (read + write bytes / time), median of `repeats` copies of a `size_mb` buffer."""
    src = np.ones(size_mb * 1024 * 1024 // 8, dtype=np.float64)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # first touch: page faults are not bandwidth
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t0)
    return 2 * src.nbytes / statistics.median(times) / 1e9


def match_hardware(hw: dict[str, Any], catalog: Catalog) -> Hardware | None:
    """The catalog entry for a manifest's `hardware` dict (first GPU if any, else the CPU), or None."""
    gpus = hw.get("gpus") or []
    if gpus:
        return _by_name(str(gpus[0].get("name", "")), catalog, "gpu")
    cpu = str(hw.get("cpu_model", ""))
    cores = hw.get("cpu_affinity") or hw.get("cpu_cores")
    by_name = _by_name(cpu, catalog, "cpu")
    if by_name is not None:
        return by_name
    for entry in catalog.hardware.values():
        if entry.kind == "cpu" and entry.max_cores and cores and int(cores) <= entry.max_cores:
            return entry
    return None


def _by_name(name: str, catalog: Catalog, kind: str) -> Hardware | None:
    """The entry whose longest `match` pattern occurs in `name` as a whole word ("L4" is not in "L40S")."""
    best: tuple[int, Hardware] | None = None
    for entry in catalog.hardware.values():
        for m in entry.match if entry.kind == kind else ():
            if re.search(r"(?<![A-Za-z0-9])" + re.escape(m) + r"(?![A-Za-z0-9])", name, re.IGNORECASE):
                if best is None or len(m) > best[0]:
                    best = (len(m), entry)
    return best[1] if best else None


@dataclass(frozen=True)
class Detected:
    catalog_id: str  # a catalog id, or "custom"
    hardware: Hardware  # the catalog entry, or the custom one (bandwidth measured)
    description: str
    measured_bw_gbps: float | None
    manifest_hardware: dict[str, Any]

    @property
    def calibration_hardware(self) -> Hardware:
        """The entry with this machine's measured bandwidth in place of a CPU catalog figure (GPUs keep the datasheet)."""
        if self.measured_bw_gbps and self.hardware.kind == "cpu":
            return self.hardware.model_copy(update={"memory_bw_gbps": self.measured_bw_gbps, "measured": True})
        return self.hardware

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["hardware"] = self.hardware.model_dump()
        return d


def custom_cpu(hw: dict[str, Any], bw_gbps: float | None) -> Hardware:
    """A catalog entry for an unlisted CPU machine, from its manifest and a measured bandwidth (None: not measured)."""
    return Hardware(id=CUSTOM_ID, name=f"custom: {hw.get('cpu_model', 'unknown CPU')} ({hw.get('cpu_cores')} cores)",
                    kind="cpu", vendor="unknown", deployments=("on-prem", "edge", "cloud"),
                    memory_gb=max(float(hw.get("mem_gb") or 1.0), 0.1), memory_bw_gbps=bw_gbps or 1.0,
                    spec_source="measured on this machine by advisor.hardware_detect", spec_as_of=time.strftime("%Y-%m-%d"),
                    spec_notes=("bandwidth measured (numpy copy)" if bw_gbps else "bandwidth NOT measured: 1 GB/s placeholder")
                    + "; peak FLOPS unknown", measured=True)


def detect(catalog: Catalog, measure: bool = True, remeasure: bool = False) -> Detected:
    """This machine, mapped to a catalog entry, or to "custom" with its memory bandwidth: measured once per
    machine and cached with its date (advisor.bandwidth_cache), measured again with `remeasure`."""
    from advisor.bandwidth_cache import cached_bandwidth

    hw = manifest.collect()["hardware"]
    entry = match_hardware(hw, catalog)
    bw = cached_bandwidth(hw, measure_memory_bandwidth_gbps, remeasure).gbps if measure else None
    gpus = hw.get("gpus") or []
    desc = (f"{len(gpus)}x {gpus[0]['name']}" if gpus else f"{hw.get('cpu_model')} ({hw.get('cpu_cores')} logical cores, "
            f"{float(hw.get('mem_gb') or 0):.0f} GB)")
    if entry is not None:
        return Detected(entry.id, entry, desc, bw, hw)
    return Detected(CUSTOM_ID, custom_cpu(hw, bw), desc, bw, hw)
