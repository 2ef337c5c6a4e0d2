"""Which hardware each saved run measured: its own machine, this machine, or the server that served it.

A run is "made here" only when its manifest's fingerprint matches this machine's
(`hardware_detect.same_machine`); the hostname decides nothing. A run saved before the
fingerprint existed is mapped from the hardware its manifest names. A machine with GPUs maps
to a GPU entry (an "unlisted GPU" one when the catalog lacks it) with its GPU count as devices
per replica. A served engine (`--engine openai`, with or without `--launch`) measured the
server, not the client: its hardware is the one declared with `--server-hardware` and recorded
in the manifest's `server_hardware`; without it the run is on "unknown hardware" and sizes and
prices nothing.
"""

from __future__ import annotations

from typing import Any

import adapters
from advisor.catalog import Catalog
from advisor.hardware.detect import Detected, MachineMap, map_machine, same_machine
from advisor.recommend.candidates import UNKNOWN_SERVER as UNKNOWN_HARDWARE
from advisor.recommend.candidates import MeasuredRun
from advisor.saved.store import RunResult

SERVER_HARDWARE_FIX = ("re-run with --server-hardware ID (and --server-hardware-count N) naming the server's hardware "
                       "(`advisor hardware` lists the ids)")


def is_served(run: RunResult) -> bool:
    """The run sent its requests to a server: the client's machine did not do the work."""
    caps = adapters.capabilities(str(run.engine.adapter))
    return (caps is not None and caps.served) or run.engine.format == "server"


def _served(run: RunResult, catalog: Catalog) -> MachineMap:
    decl: dict[str, Any] = (run.manifest or {}).get("server_hardware") or {}
    hw_id = decl.get("id")
    if not hw_id and decl.get("gpu_names"):
        return MachineMap(None, 1, (f"run {run.run_id}: its server's GPUs ({', '.join(decl['gpu_names'])}, read from "
                                    f"{decl.get('declared_by')}) are not in the hardware catalog: {UNKNOWN_HARDWARE}, "
                                    "so it sizes and prices nothing; add the GPU under `hardware:` in a --prices file "
                                    "and re-run with --server-hardware ID",))
    if not hw_id:
        return MachineMap(None, 1, (f"run {run.run_id} measured a server ({run.engine.device}) whose hardware was not "
                                    f"declared: {UNKNOWN_HARDWARE}, so it sizes and prices nothing; "
                                    f"{SERVER_HARDWARE_FIX}",))
    if hw_id not in catalog.hardware:
        return MachineMap(None, 1, (f"run {run.run_id} declares server hardware {hw_id!r}, which the catalog lacks: "
                                    f"{UNKNOWN_HARDWARE}; known: {', '.join(sorted(catalog.hardware))}",))
    count = int(decl.get("count") or 1)
    where = f" ({decl['where']})" if decl.get("where") else ""
    how = decl.get("declared_by") or "--server-hardware"
    return MachineMap(catalog.hardware[hw_id], count,
                      (f"run {run.run_id}: served by {count}x {hw_id}{where}, as given by {how}",))


def run_machine(run: RunResult, catalog: Catalog) -> MachineMap:
    """The hardware one run measured, from its manifest alone (a served run: the declared server's, or None)."""
    return _served(run, catalog) if is_served(run) else map_machine((run.manifest or {}).get("hardware") or {}, catalog)


def resolve_runs(runs: list[RunResult], catalog: Catalog, detected: Detected | None) -> list[MeasuredRun]:
    """Map each run to the catalog hardware it measured, with devices per replica and what to say about it."""
    out = []
    for run in runs:
        if run.engine.extra.get("simulated_device"):  # own_engine's sim device: no hardware to price or recommend
            continue
        man = run.manifest or {}
        here = False
        if is_served(run):
            m = _served(run, catalog)
        else:
            m = map_machine(man.get("hardware") or {}, catalog)
            here = detected is not None and same_machine(man.get("fingerprint"), detected.fingerprint)
            if detected is not None and here:
                m = MachineMap(detected.calibration_hardware, m.devices, m.notes)
        out.append(MeasuredRun(run, m.hardware, m.notes, m.devices, served=is_served(run), here=here))
    return out
