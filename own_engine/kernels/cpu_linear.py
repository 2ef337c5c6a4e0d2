"""CPU linear kernels for fp32 models: packing them (`pack_linears`, called once by `backends.choose`), and oneDNN's.

own_engine's own AVX-512 kernel (`own_engine.kernels.panel_linear`) comes first where it builds; oneDNN with the
weights repacked once into its blocked layout (below) is the fallback; plain F.linear the last resort.

PyTorch's CPU `F.linear` calls MKL, which on AMD CPUs runs the skinny products
of decoding far below memory speed: 12 layers of small-100m's weights took
22.0 ms at batch 1 and 53.8 ms at batch 8 through MKL against 15.2 and 20.5 ms
through oneDNN with packed weights (2 threads, 2-core AMD EPYC, 2026-11;
`benchmarks/own_engine.py` measures the whole step). oneDNN ships inside
PyTorch; its linear op with a prepacked weight (`torch.ops.mkldnn`) is the one
PyTorch's own compiler emits for CPU linears, but it is not a documented API,
so packing is skipped, and the engine keeps plain `F.linear`, wherever the op
is missing or gives a different result than `F.linear` on a probe. The packed
weight replaces the plain one (memory is not doubled). A tied LM head stays
plain: its weights are also the embedding table.

oneDNN builds (and JIT-compiles) one primitive per input shape, and both its
primitive cache and PyTorch's ideep cache keep up to 1024 of them, each
holding buffers: every prompt length a server sees is a new shape, so with
the defaults the engine's resident memory grew by ~0.5 MB per distinct shape
(+170-250 MB over 100 chat requests on small-100m, 2026-11). The engine caps
both caches at `PRIMITIVE_CACHE_CAPACITY` entries (least recently used out):
the shapes of the current decode batch size (5 linears) are used every step
and stay cached, a new prompt length pays its primitive's creation as it
already did. 16 entries instead of 64 took another ~35 MB off the peak at 8
users with no measured slowdown at 1 or 8 users (benchmarks/history/engines.md,
"own_engine's peak RSS at 8 users: freed KV pages, caches at 16").
"""

from __future__ import annotations

import os

import torch
from torch import nn

from own_engine.kernels.native import NativeKernels
from own_engine.kernels.panel_linear import panel_linears_in_one_arena
from own_engine.model.llama import Linear, LlamaModel

BATCH_HINT = 64  # oneDNN picks its weight layout for this many rows; measured best over 1-300 row products
PRIMITIVE_CACHE_CAPACITY = 16  # oneDNN primitives (and ideep's cached ops) kept per process, each cache


def cap_primitive_caches(capacity: int = PRIMITIVE_CACHE_CAPACITY) -> None:
    """Bound oneDNN's and ideep's per-shape caches, unless the user set them; effective only before the
    process's first oneDNN op (both libraries read their variable once, on first use)."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(capacity))
    os.environ.setdefault("LRU_CACHE_CAPACITY", str(capacity))


class PackedLinear(nn.Module):
    """A `Linear` whose weight is in oneDNN's blocked layout (CPU, fp32)."""

    def __init__(self, linear: Linear) -> None:
        super().__init__()
        self.out_features, self.in_features = linear.weight.shape
        packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), BATCH_HINT)
        self.weight = nn.Parameter(packed, requires_grad=False)  # a parameter, so the model's n_params still counts it
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")


def onednn_linear_works() -> bool:
    """Whether the packed oneDNN linear exists here and agrees with F.linear on a probe."""
    if not (torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")):
        return False
    probe = Linear(24, 40, True, torch.float32)
    with torch.no_grad():
        probe.weight.normal_()
        probe.bias.normal_()  # type: ignore[union-attr]
        x = torch.randn(3, 24)
        try:
            out = PackedLinear(probe)(x)
        except RuntimeError:
            return False
        return bool(torch.allclose(out, probe(x), atol=1e-4, rtol=1e-4))


LINEAR_KERNELS = ("auto", "panel", "onednn", "torch")  # auto: panel where it builds here, else onednn, else torch


def pack_linears(model: LlamaModel, kernels: str, native: NativeKernels | str) -> tuple[int, str, str | None]:
    """Swap every `Linear` of an fp32 CPU model for a packed one: (how many were swapped, the kernel the
    linears now use: `panel-avx512`, `onednn-packed` or `torch`, and why a faster one is not used or None).

    `kernels` names one ("panel": own_engine.kernels.panel_linear on `native`, the checked native kernels or
    why there are none; "onednn": `PackedLinear`; "torch": plain F.linear); a named one that can't run here is
    a ValueError, "auto" takes the first that can, in that order. The engine calls it through
    `own_engine.kernels.backends.choose`.
    """
    if kernels not in LINEAR_KERNELS:
        raise ValueError(f"linear_kernels must be one of {', '.join(LINEAR_KERNELS)}, got {kernels!r}")
    if kernels == "torch":
        return 0, "torch", None
    if model.embed_tokens.device.type != "cpu" or model.dtype != torch.float32:
        if kernels != "auto":
            raise ValueError(f"linear_kernels={kernels} needs an fp32 model on CPU")
        return 0, "torch", None
    cap_primitive_caches()  # before the probe: its op is the process's first oneDNN op, usually
    # (parent, name) pairs only: holding the old modules would keep every plain weight alive until the end
    targets = [(parent, child_name) for parent in model.modules() for child_name, child in parent.named_children()
               if isinstance(child, Linear)]
    note = None
    make = None
    if kernels in ("auto", "panel"):
        if isinstance(native, str):
            if kernels == "panel":
                raise ValueError(f"linear_kernels=panel: {native}")
            note = native
        else:
            make = panel_linears_in_one_arena([getattr(p, n).weight for p, n in targets], native)
            name = "panel-avx512"
    if make is None:
        if not onednn_linear_works():
            if kernels == "onednn":
                raise ValueError("linear_kernels=onednn: this PyTorch has no packed oneDNN linear")
            return 0, "torch", note
        make, name = PackedLinear, "onednn-packed"
    for parent, child_name in targets:
        setattr(parent, child_name, make(getattr(parent, child_name)))
    return len(targets), name, note
