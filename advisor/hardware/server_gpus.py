"""A server's GPUs read from its DCGM exporter's `/metrics` (the way AIPerf and GenAI-Perf read remote GPUs).

DCGM exporter labels every per-GPU series with `modelName` and `UUID` (and `gpu`, the index); the
framebuffer series (`DCGM_FI_DEV_FB_FREE` + `DCGM_FI_DEV_FB_USED` + `DCGM_FI_DEV_FB_RESERVED`, MiB) give
each GPU's memory. One read, before the run; what it found is recorded in the run's manifest as the
served engine's `server_hardware`. A node exporter's `/metrics` names no GPU model, so it is refused
with that reason rather than guessed from.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

FB_SERIES = ("DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED")
TIMEOUT_S = 5.0


class ServerGpusError(ValueError):
    """The URL could not be read or names no GPU; the message says which and what to do instead."""


@dataclass(frozen=True)
class ServerGpu:
    uuid: str
    name: str
    memory_gb: float | None


def parse_dcgm(text: str) -> list[ServerGpu]:
    """The GPUs a DCGM exporter's text exposition names, one per UUID (or per `gpu` index), in order seen."""
    from prometheus_client.parser import text_string_to_metric_families

    names: dict[str, str] = {}
    mem_mib: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            model = s.labels.get("modelName")
            key = s.labels.get("UUID") or s.labels.get("gpu")
            if not model or key is None:
                continue
            names.setdefault(key, model)
            if s.name in FB_SERIES:
                mem_mib[key] = mem_mib.get(key, 0.0) + float(s.value)
    return [ServerGpu(k, n, mem_mib[k] * 2**20 / 1e9 if k in mem_mib else None) for k, n in names.items()]


def read_server_gpus(url: str) -> list[ServerGpu]:
    """GET `url` once and parse it; an unreadable URL or one naming no GPU is a ServerGpusError."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
            text = resp.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ServerGpusError(f"--server-metrics {url}: could not read it ({e}); check the URL, or declare the "
                              "hardware with --server-hardware ID") from None
    gpus = parse_dcgm(text)
    if not gpus:
        raise ServerGpusError(f"--server-metrics {url}: no GPU with a modelName label (a DCGM exporter's /metrics "
                              "names them; a node exporter's does not); declare it with --server-hardware ID")
    return gpus


def server_hardware_from_gpus(gpus: list[ServerGpu], url: str, catalog: Any) -> dict[str, Any]:
    """The manifest's `server_hardware` for GPUs read from `url`: a catalog id, or none (then 'unknown hardware')."""
    from advisor.hardware.detect import map_machine

    m = map_machine({"gpus": [{"name": g.name, "memory_gb": g.memory_gb} for g in gpus]}, catalog)
    hw = m.hardware
    listed = hw is not None and not hw.unlisted
    return {"id": hw.id if listed and hw is not None else None, "count": len(gpus), "where": url,
            "declared_by": f"DCGM exporter at {url}", "gpu_names": sorted({g.name for g in gpus}),
            "gpu_uuids": [g.uuid for g in gpus]}
