"""The report's Environment section: saved runs grouped by the machine they ran on, one group per fingerprint.

A machine is its manifest's fingerprint (`advisor.run.manifest.fingerprint`: machine-id hash, GPU UUIDs,
CPU, cores, memory, GPUs) with its hostname; runs saved before fingerprints existed are grouped by the
same fields read from their hardware. What a run sets for itself on one machine (its CPU affinity, the
CPU idle driver it saw, the Python packages it ran with) does not split a machine: it is listed under
the machine as what differs between its runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from advisor.hardware.detect import FINGERPRINT_KEYS
from advisor.saved.store import RunResult


def machine_key(manifest: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two manifests one machine: the fingerprint's fields and the hostname."""
    fp = manifest.get("fingerprint") or {}
    hw = manifest.get("hardware") or {}
    mem = fp.get("mem_gb", hw.get("mem_gb"))
    fields = {**{k: fp.get(k) for k in FINGERPRINT_KEYS}, "cpu_model": fp.get("cpu_model", hw.get("cpu_model")),
              "cpu_cores": fp.get("cpu_cores", hw.get("cpu_cores")), "mem_gb": None if mem is None else round(float(mem)),
              "gpus": fp.get("gpus", hw.get("gpus"))}
    return (manifest.get("hostname"), repr(sorted(fields.items())))


def machine_title(manifest: dict[str, Any]) -> str:
    """'vm: Intel(R) Xeon(R) Processor, 16 cores, 135 GB, 1 x NVIDIA H200': the host and what tells it apart."""
    hw = manifest.get("hardware") or {}
    parts = [str(p) for p in (hw.get("cpu_model"),) if p]
    if hw.get("cpu_cores") is not None:
        parts.append(f"{hw['cpu_cores']} cores")
    if hw.get("mem_gb") is not None:
        parts.append(f"{float(hw['mem_gb']):.0f} GB")
    names = [str(g.get("name", "GPU")) for g in hw.get("gpus") or [] if isinstance(g, dict)]
    for name in dict.fromkeys(names):
        parts.append(f"{names.count(name)} x {name}")
    if not names:
        parts.append("no GPU")
    return f"{manifest.get('hostname') or 'unnamed host'}: {', '.join(parts)}"


def _flat(manifest: dict[str, Any]) -> dict[str, Any]:
    """A manifest's hardware and software as one level of 'name: value' (packages one by one)."""
    sw = manifest.get("software") or {}
    out = dict(manifest.get("hardware") or {})
    out.update({k: v for k, v in sw.items() if k != "packages"})
    out.update({f"package {k}": v for k, v in (sw.get("packages") or {}).items()})
    return out


def machines(runs: Sequence[RunResult], labels: dict[str, str]) -> list[dict[str, Any]]:
    """One entry per machine: its title, fingerprint hash, the fields all its runs share, and what differs by run."""
    groups: dict[tuple[Any, ...], list[RunResult]] = {}
    for run in runs:
        groups.setdefault(machine_key(run.manifest or {}), []).append(run)
    out = []
    for members in groups.values():
        flats = [_flat(r.manifest or {}) for r in members]
        keys = list(dict.fromkeys(k for f in flats for k in f))
        same = {k: flats[0].get(k) for k in keys if all(f.get(k) == flats[0].get(k) for f in flats)}
        differs = []
        for k in keys:
            if k in same:
                continue
            by_value: dict[str, dict[str, Any]] = {}
            for run, f in zip(members, flats):
                by_value.setdefault(repr(f.get(k)), {"value": f.get(k), "runs": []})["runs"].append(labels[run.run_id])
            differs.append({"name": k, "values": list(by_value.values())})
        manifest = members[0].manifest or {}
        machine_id = ((manifest.get("fingerprint") or {}).get("machine_id_sha256") or "")[:12]
        out.append({"title": machine_title(manifest), "machine_id": machine_id,
                    "runs": [labels[r.run_id] for r in members],
                    "hardware": {k: v for k, v in same.items() if k in (manifest.get("hardware") or {})},
                    "software": {k: v for k, v in same.items() if not k.startswith("package ")
                                 and k not in (manifest.get("hardware") or {})},
                    "packages": {k.removeprefix("package "): v for k, v in same.items() if k.startswith("package ")},
                    "differs": differs})
    return out
