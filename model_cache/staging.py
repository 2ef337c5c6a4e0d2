"""Where a model or a conversion is written before it replaces the cached one, and what a killed writer left.

Used by `advisor models create` (model_cache.create) and by every format conversion (adapters.formats).
A model or conversion is written into a hidden folder beside its target, named for the
target and its owner: `.<target>.new.<pid>@<host>.<random>`. `swap_in` then
renames the old target aside (`.<target>.old.<pid>@<host>.<random>`), renames
the new folder in, and only then deletes the old one, so a kill at any moment
leaves either a complete target or, between the two renames, no target and
both complete folders aside. `sweep`, run before each conversion, deals with
what owners that are no longer running on this host left: where the target
is missing it renames one back (the new folder if it was finished, else the
old one), and it deletes the rest. A folder whose owner is alive (or whose
pid was reused), or that was made on another host sharing the cache, is never
touched. Names without an owner (temporary folders of older advisor
versions) are left alone: nothing says whether their conversion still runs.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

_LEFTOVER = re.compile(r"^\.(?P<target>[A-Za-z0-9_-]+)\.(?P<kind>new|old)\.(?P<pid>\d+)@(?P<host>[A-Za-z0-9-]+)\.\w+$")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def stage(target: Path) -> Path:
    """A new empty hidden folder beside `target`, owned by this process, to write the conversion into."""
    folder = Path(tempfile.mkdtemp(prefix=f".{target.name}.new.{os.getpid()}@{_host()}.", dir=target.parent))
    folder.chmod(0o755)  # mkdtemp makes it private; a model cache is ordinary user data
    return folder


def swap_in(staged: Path, target: Path) -> None:
    """Replace `target` by the finished `staged` folder: old aside, new in, old deleted (never neither on disk)."""
    aside = staged.with_name(staged.name.replace(".new.", ".old.", 1))
    if target.exists():
        os.rename(target, aside)
    os.rename(staged, target)
    shutil.rmtree(aside, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def sweep(parent: Path, complete: Callable[[Path], bool]) -> list[Path]:
    """Restore or delete what dead owners on this host left in `parent`; returns the folders restored."""
    if not parent.is_dir():
        return []
    host = _host()
    dead: dict[str, list[tuple[str, Path]]] = {}
    for entry in parent.iterdir():
        m = _LEFTOVER.match(entry.name)
        if m and entry.is_dir() and m["host"] == host and not _alive(int(m["pid"])):
            dead.setdefault(m["target"], []).append((m["kind"], entry))
    restored = []
    for target_name, leftovers in dead.items():
        target = parent / target_name
        if not target.exists():
            # a finished new conversion first (its manifest is written last), else the old one it was replacing
            for kind in ("new", "old"):
                folder = next((f for k, f in leftovers if k == kind and complete(f)), None)
                if folder is not None:
                    try:
                        os.rename(folder, target)
                        restored.append(target)
                    except OSError:  # another process put a target there meanwhile: keep theirs
                        pass
                    break
        for _, folder in leftovers:
            if folder.exists():
                shutil.rmtree(folder, ignore_errors=True)
    return restored
