"""Which catalog hardware a machine is: detect this one, or map a run's recorded manifest.

GPUs are matched by name (pynvml, when installed: its absence is normal); a GPU the catalog
lacks becomes an "unlisted GPU" entry (NVML's name and memory, no peaks, no price: nothing is
estimated from it). A machine with GPUs always maps to a GPU entry, never to a CPU one, and
its GPU count is the devices per replica. CPUs are matched by model string, or by core count
for small VMs; any other CPU machine becomes a "custom" entry whose memory bandwidth is
measured here with a numpy copy (median of a few passes; peak FLOPS left unknown).
Whether a saved run was made on this machine is decided by `same_machine` on the manifests'
fingerprints, never by hostname (`vm`, `localhost` and pod names are shared by many machines).
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.catalog import Catalog, Hardware
from advisor.run import manifest
from fileform import FileForm

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


FINGERPRINT_KEYS = ("machine_id_sha256", "gpu_uuids", "cpu_model", "cpu_cores", "mem_gb", "gpus")


def same_machine(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Two manifest fingerprints are one machine: a machine-id hash on both, and every recorded field equal.

    The machine-id alone is not enough (containers made from one image share it), so the GPU UUIDs,
    CPU, core count, memory and GPUs must match too. No fingerprint (a run saved before it existed),
    or no machine-id on either side: not provably the same machine, so False.
    """
    if not a or not b or not a.get("machine_id_sha256") or not b.get("machine_id_sha256"):
        return False
    return all(a.get(k) == b.get(k) for k in FINGERPRINT_KEYS)


@dataclass(frozen=True)
class MachineMap:
    """A manifest's machine as catalog hardware: the entry, the devices per replica, and what to say about it."""

    hardware: Hardware | None  # None: a CPU machine the catalog lacks
    devices: int
    notes: tuple[str, ...] = ()


def unlisted_gpu(name: str, memory_gb: float | None) -> Hardware:
    """An entry for a GPU the catalog lacks: NVML's name and memory, no peaks and no price, so nothing is estimated."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"
    vendor = next((v for v in ("nvidia", "amd", "intel") if v in name.lower()), "unknown")
    mem = float(memory_gb or 0.0)
    return Hardware(id=f"unlisted-gpu-{slug}", name=f"unlisted GPU: {name}" + (f" ({mem:.0f} GB)" if mem else ""),
                    kind="gpu", vendor=vendor, deployments=("cloud", "on-prem", "edge"), memory_gb=max(mem, 0.1),
                    spec_source="NVML name and memory recorded in the run's manifest", spec_as_of="run",
                    spec_notes="not in the hardware catalog: no bandwidth or FLOPS peaks, so no roofline estimate "
                               "is made from its runs and it has no price (pass --price ID=USD_PER_HOUR)",
                    unlisted=True)


def map_machine(hw: dict[str, Any], catalog: Catalog) -> MachineMap:
    """The catalog entry and devices per replica for a manifest's `hardware` dict (GPUs first, then the CPU)."""
    gpus = [g for g in hw.get("gpus") or [] if isinstance(g, dict)]
    if not gpus:
        return MachineMap(match_hardware(hw, catalog), 1)
    names = sorted({str(g.get("name", "")) for g in gpus})
    first = str(gpus[0].get("name", ""))
    notes = []
    if len(names) > 1:
        notes.append(f"the machine has mixed GPUs ({', '.join(names)}): mapped to the first, {first}")
    entry = _by_name(first, catalog, "gpu")
    if entry is None:
        entry = unlisted_gpu(first, gpus[0].get("memory_gb"))
        notes.append(f"GPU {first!r} is not in the hardware catalog: its runs are reported as measured, but nothing "
                     "is estimated from them (no bandwidth or FLOPS peaks) and they are priced only with "
                     f"--price {entry.id}=USD_PER_HOUR")
    if len(gpus) > 1:
        notes.append(f"{len(gpus)} GPUs in the run's machine: priced as {len(gpus)} devices per replica (every GPU "
                     "of the machine is counted, whether the engine used it or not)")
    return MachineMap(entry, len(gpus), tuple(notes))


def _by_name(name: str, catalog: Catalog, kind: str) -> Hardware | None:
    """The entry whose longest `match` pattern occurs in `name` as a whole word ("L4" is not in "L40S"), unless a
    word of its `match_unless` does too ("NVIDIA H200 NVL" is not the H200 SXM: other power, other price)."""
    def has(word: str) -> bool:
        return re.search(r"(?<![A-Za-z0-9])" + re.escape(word) + r"(?![A-Za-z0-9])", name, re.IGNORECASE) is not None

    best: tuple[int, Hardware] | None = None
    for entry in catalog.hardware.values():
        if entry.kind != kind or any(has(w) for w in entry.match_unless):
            continue
        for m in entry.match:
            if has(m) and (best is None or len(m) > best[0]):
                best = (len(m), entry)
    return best[1] if best else None


@dataclass(frozen=True)
class Detected(FileForm):
    catalog_id: str  # a catalog id, or "custom"
    hardware: Hardware  # the catalog entry, or the custom one (bandwidth measured)
    description: str
    measured_bw_gbps: float | None
    manifest_hardware: dict[str, Any]
    fingerprint: dict[str, Any] | None = None  # this machine's, as a run's manifest records it

    @property
    def calibration_hardware(self) -> Hardware:
        """The entry with this machine's measured bandwidth in place of a CPU catalog figure (GPUs keep the datasheet)."""
        if self.measured_bw_gbps and self.hardware.kind == "cpu":
            return self.hardware.model_copy(update={"memory_bw_gbps": self.measured_bw_gbps, "measured": True})
        return self.hardware


def custom_cpu(hw: dict[str, Any], bw_gbps: float | None) -> Hardware:
    """A catalog entry for an unlisted CPU machine, from its manifest and a measured bandwidth (None: not measured)."""
    return Hardware(id=CUSTOM_ID, name=f"custom: {hw.get('cpu_model', 'unknown CPU')} ({hw.get('cpu_cores')} cores)",
                    kind="cpu", vendor="unknown", deployments=("on-prem", "edge", "cloud"),
                    memory_gb=max(float(hw.get("mem_gb") or 1.0), 0.1), memory_bw_gbps=bw_gbps or 1.0,
                    spec_source="measured on this machine by advisor.hardware.detect", spec_as_of=time.strftime("%Y-%m-%d"),
                    spec_notes=("bandwidth measured (numpy copy)" if bw_gbps else "bandwidth NOT measured: 1 GB/s placeholder")
                    + "; peak FLOPS unknown", measured=True)


def detect(catalog: Catalog, measure: bool = True, remeasure: bool = False) -> Detected:
    """This machine, mapped to a catalog entry, or to "custom" with its memory bandwidth: measured once per
    machine and cached with its date (advisor.hardware.bandwidth_cache), measured again with `remeasure`."""
    from advisor.hardware.bandwidth_cache import cached_bandwidth

    man = manifest.collect()
    hw, fp = man["hardware"], man.get("fingerprint")
    entry = map_machine(hw, catalog).hardware
    bw = cached_bandwidth(hw, measure_memory_bandwidth_gbps, remeasure).gbps if measure else None
    gpus = hw.get("gpus") or []
    desc = (f"{len(gpus)}x {gpus[0]['name']}" if gpus else f"{hw.get('cpu_model')} ({hw.get('cpu_cores')} logical cores, "
            f"{float(hw.get('mem_gb') or 0):.0f} GB)")
    if entry is not None:
        return Detected(entry.id, entry, desc, bw, hw, fp)
    return Detected(CUSTOM_ID, custom_cpu(hw, bw), desc, bw, hw, fp)
