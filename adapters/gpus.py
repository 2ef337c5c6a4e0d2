"""This machine's NVIDIA GPUs through NVML (`pynvml`, from `nvidia-ml-py`): the one place NVML is opened.

`probe()` says why there is no usable GPU (None when there is one); `list_gpus()` reads name, UUID and
memory of each. Engine checks (adapters), the run manifest, matrix resource checks and GPU telemetry all
read GPUs here; the telemetry sampler keeps its own long NVML session through `nvml()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NO_PYNVML = "pynvml not installed (pip install nvidia-ml-py)"


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML's index (PCI bus order)
    name: str
    uuid: str
    memory_total_mb: float


def nvml() -> Any:
    """The pynvml module (ImportError without it); imported here so advisor loads without it."""
    import pynvml

    return pynvml


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def probe(device_index: int = 0) -> str | None:
    """None when NVML and GPU `device_index` are usable, else why not (no pynvml, no driver, no GPU)."""
    try:
        nv = nvml()
    except ImportError:
        return NO_PYNVML
    try:
        nv.nvmlInit()
    except nv.NVMLError as e:
        return f"no NVIDIA driver (NVML: {e})"
    try:
        count = nv.nvmlDeviceGetCount()
    finally:
        nv.nvmlShutdown()
    if count == 0:
        return "no GPU"
    if not 0 <= device_index < count:
        return f"no GPU with index {device_index} (found {count})"
    return None


def list_gpus() -> list[Gpu]:
    """Every GPU NVML sees; empty without pynvml, a driver or a GPU (probe() says which)."""
    try:
        nv = nvml()
    except ImportError:
        return []
    try:
        nv.nvmlInit()
    except nv.NVMLError:
        return []
    try:
        out = []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            out.append(Gpu(i, _text(nv.nvmlDeviceGetName(h)), _text(nv.nvmlDeviceGetUUID(h)),
                           nv.nvmlDeviceGetMemoryInfo(h).total / 2**20))
        return out
    finally:
        nv.nvmlShutdown()
