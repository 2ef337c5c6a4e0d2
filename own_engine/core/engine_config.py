"""EngineConfig: everything `LLMEngine` is built from, validated once, when it is made.

One frozen dataclass instead of a keyword list, so that a bad value fails with a message naming it and its
valid range before any model is loaded, and a caller can build, compare and print a configuration without an
engine. What a field leaves unset (`None`) the runner decides for its device (`own_engine.core.runner`): the
per-step token budget, the KV cache's size, CUDA graphs, overlap scheduling. Nothing here touches the device,
the environment or the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from own_engine.core.sim_device import is_sim, parse_sim
from own_engine.kernels.cpu_linear import LINEAR_KERNELS
from own_engine.model.loader import DTYPES

DECODE_ATTENTION = ("sdpa", "triton")  # own_engine.model.paged_attention.decode_route


@dataclass(frozen=True)
class EngineConfig:
    """How to build an `LLMEngine`.

    `max_model_len` caps prompt + output per request (default: the model's context); `max_num_seqs` caps the
    sequences in one step; `max_num_batched_tokens` is the per-step token budget that prompts are chunked to
    (default: the runner's for its device). The KV cache holds `num_kv_blocks` blocks of `block_size` tokens;
    by default enough for `max_num_seqs` sequences of `max_model_len` tokens, but at most
    `kv_cache_memory_fraction` of the memory available when the engine starts (default: the runner's), or
    exactly `kv_cache_gb` GiB when that is given. `linear_kernels` picks the CPU fp32 linear kernel
    (`own_engine.kernels.backends.choose`); `release_freed_kv=False` keeps a freed KV block's pages
    (`memory_release`); `overlap` schedules and launches step n+1 before step n's tokens are awaited (default:
    the runner's); `decode_attention` picks the decode rows' attention on CUDA: "sdpa" (the padded batch) or
    "triton" (the paged kernel, opt-in). `device` is "auto", a torch device ("cpu", "cuda", "cuda:1") or a
    simulated one ("sim:h200", `own_engine.core.sim_device`).
    """

    model: str | Path | None = None  # a path or preset name (`model_cache.resolve`); None: the default model
    device: str = "auto"
    dtype: str = "auto"
    max_num_seqs: int = 64
    max_num_batched_tokens: int | None = None
    max_model_len: int | None = None
    block_size: int = 16
    num_kv_blocks: int | None = None
    kv_cache_gb: float | None = None
    kv_cache_memory_fraction: float | None = None
    threads: int | None = None
    seed: int = 0
    cuda_graphs: bool | None = None
    linear_kernels: str = "auto"
    release_freed_kv: bool = True
    overlap: bool | None = None
    decode_attention: str = "sdpa"

    def __post_init__(self) -> None:
        for name in ("max_num_seqs", "block_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_model_len", "num_kv_blocks", "threads"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1 (or None: the default), got {value}")
        budget = self.max_num_batched_tokens
        if budget is not None and budget < self.max_num_seqs:
            raise ValueError(f"max_num_batched_tokens ({budget}) must be >= max_num_seqs ({self.max_num_seqs}): "
                             "every running sequence needs room for its token in a step")
        if self.kv_cache_gb is not None and not self.kv_cache_gb > 0:
            raise ValueError(f"kv_cache_gb must be > 0 (or None: sized from memory), got {self.kv_cache_gb}")
        fraction = self.kv_cache_memory_fraction
        if fraction is not None and not 0 < fraction <= 1:
            raise ValueError(f"kv_cache_memory_fraction must be in (0, 1], got {fraction}")
        if self.dtype != "auto" and self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; choose auto, {', '.join(DTYPES)}")
        if self.linear_kernels not in LINEAR_KERNELS:
            raise ValueError(f"linear_kernels must be one of {', '.join(LINEAR_KERNELS)}, got {self.linear_kernels!r}")
        if self.decode_attention not in DECODE_ATTENTION:
            raise ValueError(f"decode_attention must be 'sdpa' or 'triton', got {self.decode_attention!r}")
        self._check_device()

    def _check_device(self) -> None:
        if self.device == "auto":
            return
        if is_sim(self.device):
            parse_sim(self.device)  # a SimDeviceError (a ValueError) shows the spelling
            return
        try:
            torch.device(self.device)
        except RuntimeError:
            raise ValueError(f"unknown device {self.device!r}; use auto, cpu, cuda, cuda:N or sim:PROFILE "
                             "(e.g. sim:h200)") from None

    @property
    def simulated(self) -> bool:
        """Whether the device is a simulated one (`sim_device`): its runner sleeps instead of running the model."""
        return is_sim(self.device)
