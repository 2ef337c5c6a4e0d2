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

try:  # one version for the whole distribution: pyproject.toml's
    __version__ = metadata.version("advisor")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

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
