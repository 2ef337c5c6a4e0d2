"""Run folders in transit: a cell saves its runs in a staging folder, they move into the runs store.

A cell on a Ray node saves into a temporary folder there; `pack` turns it into one compressed archive
(bytes, returned through Ray's object store), `unpack` restores it in the driver's staging folder, and
`ingest` moves every complete run (result.json) and sweep (sweep.json) into the runs store, where they sit
exactly as `advisor bench` and `advisor sweep` would have put them. A local cell skips pack/unpack.
"""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

from advisor.saved.store import RESULT_FILE
from advisor.sweep.run import SWEEP_FILE


class BundleError(RuntimeError):
    """Runs that cannot be moved into the store; the message names the folder."""


def pack(folder: Path) -> bytes:
    """Every file under `folder` as a gzip'd tar archive, with paths relative to it."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=3) as tar:
        for p in sorted(Path(folder).iterdir()):
            tar.add(p, arcname=p.name)
    return buf.getvalue()


def unpack(data: bytes, dest: Path) -> None:
    """Restore a `pack` archive under `dest` (regular files and folders only, nothing outside `dest`)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(dest, filter="data")


def complete_folders(staging: Path) -> list[Path]:
    """The saved runs and sweeps in a staging folder (a run cut off before its result.json is left out)."""
    if not staging.is_dir():
        return []
    return [p for p in sorted(staging.iterdir()) if (p / RESULT_FILE).is_file() or (p / SWEEP_FILE).is_file()]


def ingest(staging: Path, root: Path) -> list[str]:
    """Move the complete runs and sweeps from `staging` into the runs store `root`; their ids."""
    root.mkdir(parents=True, exist_ok=True)
    moved = []
    for p in complete_folders(staging):
        target = root / p.name
        if target.exists():
            raise BundleError(f"{target} already exists; a run id was reused, which should not happen: "
                              f"the new copy stays in {p}")
        shutil.move(str(p), str(target))
        moved.append(p.name)
    return moved
