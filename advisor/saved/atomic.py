"""Atomic saves: a reader never sees half a file or half a run folder, and a failed save leaves nothing.

A file is written under a temporary name in its own folder and renamed over the target (a rename
within one file system is atomic). A new run folder is filled under a hidden sibling name
(`.<name>.saving-<hex>`) and renamed into place once whole. Whatever stops a save (a full disk, a
signal that drops it), its temporary file or folder is removed before the error goes on. A folder
that a killed process left half-saved keeps its `.saving-` name: `unfinished()` finds it, and
`report` and `show` warn about it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

SAVING = ".saving-"  # in the name of a folder being saved


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder; none is left if it fails."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(3)}.tmp")
    try:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def staged_folder(final: Path) -> Iterator[Path]:
    """A new folder filled under a hidden name and renamed to `final` when the block ends well.

    On any error (disk full, a signal) the hidden folder and all in it are removed and the error goes on.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}{SAVING}{secrets.token_hex(3)}")
    try:
        tmp.mkdir()
        yield tmp
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def unfinished(root: Path) -> list[Path]:
    """Run or sweep folders under `root` that a save did not finish: a hidden `.saving-` folder, a folder
    with a temporary file left in it, or one with records but no result.json."""
    root = Path(root)
    if not root.is_dir():
        return []
    out = []
    for p in sorted(root.iterdir()):
        if not p.is_dir():
            continue
        if SAVING in p.name:
            out.append(p)
            continue
        names = {c.name for c in p.iterdir()}
        if any(n.endswith(".tmp") for n in names) or ("requests.parquet" in names and "result.json" not in names):
            out.append(p)
    return out


def unfinished_warning(folder: Path) -> str:
    return (f"warning: unfinished run folder {folder}: a save did not finish (killed or out of space); "
            "it is not a run, delete it")
