"""The product's identity: its distribution name on the package registry and the version of the code running.

Its own package, below every other (layer 0), so that the engine adapters, the CLI and a Ray worker read the
version without importing an engine. `advisor.__version__` re-exports it.
"""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "inference-advisor"  # the name on the package registry ("advisor" there is another project)
SHIPPED_VERSION_ENV = "ADVISOR_SHIPPED_VERSION"  # set on Ray workers by --ship-code, with the driver's version


def _version() -> str:
    """pyproject.toml's version; from a git checkout, with the commit it runs (`0.1.0+g4b15ba7`, `.dirty` when
    tracked files differ), so a run made from a source tree says exactly which code made it."""
    import os
    import subprocess
    import tomllib
    from pathlib import Path

    shipped = os.environ.get(SHIPPED_VERSION_ENV)
    if shipped:  # this code was sent by a driver (`advisor matrix --ship-code`): the copy has no .git of its own
        return shipped
    root = Path(__file__).resolve().parent.parent
    if (root / ".git").exists() and (root / "pyproject.toml").is_file():
        try:
            base = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
            sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True, timeout=5, check=True).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5, check=True).stdout.strip()
            return f"{base}+g{sha}" + (".dirty" if dirty else "")
        except (OSError, subprocess.SubprocessError, KeyError, ValueError):
            pass  # no git, or not a checkout of ours: the installed metadata below
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a copied source tree, never installed, without git
        return "0+unknown"


__version__ = _version()
