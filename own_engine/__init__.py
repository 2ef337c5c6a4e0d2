"""own_engine: the built-in reference LLM engine (PyTorch, CPU and CUDA).

Continuous batching over a paged KV cache (`LLMEngine`), an asynchronous
front (`AsyncLLMEngine`), and the naive static-batching baseline
(`StaticBatchEngine`). The engine sees token ids only, never text. Names are
imported lazily so `own_engine.presets`/`paths` cost no torch import.

The model and engine are written by hand on plain PyTorch ops (SDPA, linear,
index_select) because a paged KV cache and continuous batching need control
of attention that `transformers` does not expose; `transformers` stays the
test oracle for logits and greedy tokens.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any

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

_LAZY = {
    "LLMEngine": "own_engine.llm_engine",
    "RequestRefused": "own_engine.llm_engine",
    "AsyncLLMEngine": "own_engine.async_engine",
    "StaticBatchEngine": "own_engine.static_engine",
    "SamplingParams": "own_engine.sampling_params",
    "ModelConfig": "own_engine.config",
    "create_model": "own_engine.create",
    "resolve_model": "own_engine.paths",
    "PRESETS": "own_engine.presets",
}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'own_engine' has no attribute '{name}'")
