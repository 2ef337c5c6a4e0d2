"""own_engine: the built-in reference LLM engine (PyTorch, CPU and CUDA), in three rooms.

- `own_engine.core`: the engine: continuous batching over a paged KV cache (`LLMEngine`), an asynchronous
  front (`AsyncLLMEngine`), the naive static-batching baseline (`StaticBatchEngine`), the scheduler, block
  manager, sequences and sampling. The engine sees token ids only, never text.
- `own_engine.model`: the LLaMA-family model (layers, rotary embedding, attention over the paged cache), its
  loader and its fp32 reference.
- `own_engine.kernels`: the speed work behind the model's linear and attention calls: oneDNN-packed and own
  AVX-512 linears, the native C kernels (`kernels/*.c`), CUDA graphs.

The model cache and its tools (paths, presets, create, tokenizers, a folder's config.json) are the package
`model_cache`, which imports no engine code. Names are imported lazily, so `import own_engine` costs no torch
import.

The model and engine are written by hand on plain PyTorch ops (SDPA, linear,
index_select) because a paged KV cache and continuous batching need control
of attention that `transformers` does not expose; `transformers` stays the
test oracle for logits and greedy tokens.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "LLMEngine": "own_engine.core.llm_engine",
    "RequestRefused": "own_engine.core.llm_engine",
    "AsyncLLMEngine": "own_engine.core.async_engine",
    "StaticBatchEngine": "own_engine.core.static_engine",
    "SamplingParams": "own_engine.core.sampling_params",
}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'own_engine' has no attribute '{name}'")
