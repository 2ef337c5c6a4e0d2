"""The shipped H200 runs (tests/data/gpu_h200_2026_11_26) as fixtures, and edited copies of them."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

from advisor.catalog import load_catalog
from advisor.hardware.detect import Detected
from advisor.saved.store import RunResult, list_runs

H200_DIR = Path(__file__).resolve().parents[2] / "data" / "gpu_h200_2026_11_26"
CHAT = "20261126-010437-chat-own-5881"  # VALID, 5.2 req/s
SATURATED = "20261126-010554-chat-own-bf13"  # sweep step at 20 req/s, SATURATED
CLOSED = "20261126-010849-chat-closed-own-f415"  # chat-closed, 64 users, VALID
THIS_FINGERPRINT = {"machine_id_sha256": "ab" * 32, "gpu_uuids": [], "cpu_model": "Intel(R) Xeon(R) Processor",
                    "cpu_cores": 2, "mem_gb": 8, "gpus": []}


def this_cpu_vm() -> Detected:
    """This 2-core machine as `detect` sees it (its host is called `vm` too)."""
    cat = load_catalog()
    return Detected("cpu-2core-vm", cat.get("cpu-2core-vm"), "Xeon (2 logical cores, 8 GB)", 20.0,
                    {"cpu_model": "Intel(R) Xeon(R) Processor", "cpu_cores": 2, "gpus": []}, dict(THIS_FINGERPRINT))


def raw(run_id: str) -> dict[str, Any]:
    return json.loads((H200_DIR / run_id / "result.json").read_text())


def copy_runs(dest: Path, run_ids: tuple[str, ...] = (CHAT, SATURATED)) -> Path:
    for rid in run_ids:
        shutil.copytree(H200_DIR / rid, dest / rid)
    return dest


def write_edited(dest: Path, src_id: str, new_id: str, edit: Any) -> dict[str, Any]:
    """A copy of run `src_id` saved as `new_id` after `edit(dict)` changed it (records copied unchanged)."""
    d = copy.deepcopy(raw(src_id))
    d["run_id"] = new_id
    edit(d)
    (dest / new_id).mkdir(parents=True)
    shutil.copy(H200_DIR / src_id / "requests.parquet", dest / new_id / "requests.parquet")
    (dest / new_id / "result.json").write_text(json.dumps(d))
    return d


def load(root: Path) -> list[RunResult]:
    return list_runs(root)
