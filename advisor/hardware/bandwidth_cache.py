"""One memory-bandwidth figure per machine, measured once and cached with its date.

`advisor recommend` calibrates CPU estimates on this machine's copy bandwidth. Measuring it on every
call made its margins wobble (46%, 45%, 44% on one machine), so the first measurement is kept in
$ADVISOR_HOME/bandwidth.json under a key for the machine (CPU model, cores, memory and the hash of
/etc/machine-id) with the date it was taken; later calls reuse it until `--remeasure`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.saved.atomic import write_atomic
from model_cache.paths import advisor_home

CACHE_FILE = "bandwidth.json"


@dataclass(frozen=True)
class Bandwidth:
    gbps: float
    measured_utc: str  # when it was measured (YYYY-MM-DD HH:MM UTC)
    cached: bool  # read from the cache (False: measured by this call)

    def text(self) -> str:
        how = "cached" if self.cached else "measured now"
        return f"{self.gbps:.1f} GB/s, measured {self.measured_utc} ({how}; --remeasure to measure again)"


def machine_key(hw: dict[str, Any]) -> str:
    """This machine, as a manifest's `hardware` describes it, plus its machine-id (containers may share a
    hostname, and two VMs a CPU model)."""
    mid = ""
    with contextlib.suppress(OSError):
        mid = Path("/etc/machine-id").read_text().strip()
    parts = [str(hw.get(k)) for k in ("cpu_model", "cpu_cores", "mem_gb")] + [mid]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def lookup(hw: dict[str, Any], home: Path | None = None) -> Bandwidth | None:
    """The cached figure for this machine, if there is one."""
    with contextlib.suppress(OSError, ValueError, TypeError):
        entry = json.loads(((home or advisor_home()) / CACHE_FILE).read_text()).get(machine_key(hw))
        if isinstance(entry, dict) and isinstance(entry.get("gbps"), int | float) and entry["gbps"] > 0:
            return Bandwidth(float(entry["gbps"]), str(entry.get("measured_utc", "?")), True)
    return None


def cached_bandwidth(hw: dict[str, Any], measure: Callable[[], float], remeasure: bool = False,
                     home: Path | None = None) -> Bandwidth:
    """The machine's cached bandwidth, else `measure()` it now and cache it (a cache it cannot write is skipped)."""
    path = (home or advisor_home()) / CACHE_FILE
    known = None if remeasure else lookup(hw, home)
    if known is not None:
        return known
    cache: Any = {}
    with contextlib.suppress(OSError, ValueError):
        cache = json.loads(path.read_text())
    bw = Bandwidth(float(measure()), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), False)
    cache = cache if isinstance(cache, dict) else {}
    cache[machine_key(hw)] = {"gbps": bw.gbps, "measured_utc": bw.measured_utc, "cpu_model": hw.get("cpu_model")}
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(cache, indent=1))
    return bw
