"""CPU kernels for the linear layers of an fp32 model: which one runs is the engine's `linear_kernels`.

- "onednn-packed" (the default): weights repacked once into oneDNN's blocked layout (below);
- "openblas-gemv": plain weights; a one-row step (batch-1 decode) through numpy's matmul, i.e. OpenBLAS's
  GEMV, with torch at one thread for that step, every other step through oneDNN on the plain weights;
- "torch": plain `F.linear` (MKL).

The trade between the first two, measured in turns on one machine (2-core AMD EPYC, 2026-11-23,
`benchmarks/own_engine_linears.py`, benchmarks/RESULTS.md): OpenBLAS reads the weights at ~23 GB/s
in a GEMV against ~20 GB/s for packed oneDNN, so a batch-1 decode step is ~1.3x faster; oneDNN on
plain weights is ~0.9x packed at 8 rows, so an 8-sequence decode step is ~8% slower. torch's OpenMP
pool and OpenBLAS's own pool spin against each other on a small machine when both have threads,
hence one torch thread for the OpenBLAS steps (`one_row_threads`).


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
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

from own_engine.model import Linear, LlamaModel

LINEAR_KERNELS = ("onednn-packed", "openblas-gemv", "torch")
BATCH_HINT = 64  # oneDNN picks its weight layout for this many rows; measured best over 1-300 row products


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


def pack_linears(model: LlamaModel) -> int:
    """Swap every `Linear` of an fp32 CPU model for a `PackedLinear`; how many were swapped (0: left as is)."""
    if model.embed_tokens.device.type != "cpu" or model.dtype != torch.float32 or not onednn_linear_works():
        return 0
    # (parent, name) pairs only: holding the old modules would keep every plain weight alive until the end
    targets = [(parent, name) for parent in model.modules() for name, child in parent.named_children()
               if isinstance(child, Linear)]
    for parent, name in targets:
        setattr(parent, name, PackedLinear(getattr(parent, name)))
    return len(targets)


class GemvLinear(nn.Module):
    """A `Linear` whose one-row products go through numpy's BLAS (OpenBLAS's GEMV), others through oneDNN."""

    def __init__(self, linear: Linear) -> None:
        super().__init__()
        self.out_features, self.in_features = linear.weight.shape
        self.weight, self.bias = linear.weight, linear.bias
        self._weight_t = linear.weight.detach().numpy().T  # a view: no second copy of the weights

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] == 1 and x.is_contiguous():
            y = torch.from_numpy(x.detach().numpy() @ self._weight_t)
            return y if self.bias is None else y.add_(self.bias)
        return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")


def numpy_blas() -> str:
    """The BLAS library numpy was built with, e.g. 'scipy-openblas' ('' where numpy does not say)."""
    try:
        return str(np.show_config(mode="dicts")["Build Dependencies"]["blas"].get("name") or "")
    except (KeyError, TypeError, AttributeError):
        return ""


def openblas_gemv_works() -> bool:
    """Whether numpy runs on OpenBLAS here and a `GemvLinear` agrees with F.linear on a probe."""
    if "openblas" not in numpy_blas().lower() or not onednn_linear_works():
        return False
    probe = Linear(24, 40, True, torch.float32)
    with torch.no_grad():
        probe.weight.normal_()
        probe.bias.normal_()  # type: ignore[union-attr]
        gemv = GemvLinear(probe)
        return all(bool(torch.allclose(gemv(x), probe(x), atol=1e-4, rtol=1e-4))
                   for x in (torch.randn(1, 24), torch.randn(3, 24)))


def set_blas_threads(threads: int) -> None:
    """numpy's OpenBLAS pool to `threads` (it starts at one per CPU it sees, not at the engine's count)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")


def use_linear_kernels(model: LlamaModel, kind: str, threads: int) -> str:
    """Give the model's linear layers the kernels `kind` names; returns the kind in effect ("torch" where the
    asked one cannot run here: not CPU fp32, or the op is missing or disagrees with F.linear)."""
    if kind not in LINEAR_KERNELS:
        raise ValueError(f"linear_kernels must be one of {', '.join(LINEAR_KERNELS)}, got {kind!r}")
    if kind == "onednn-packed":
        return kind if pack_linears(model) else "torch"
    if kind == "torch" or model.embed_tokens.device.type != "cpu" or model.dtype != torch.float32 \
            or not openblas_gemv_works():
        return "torch"
    set_blas_threads(threads)
    targets = [(parent, name) for parent in model.modules() for name, child in parent.named_children()
               if isinstance(child, Linear)]
    for parent, name in targets:
        setattr(parent, name, GemvLinear(getattr(parent, name)))
    return kind


@contextmanager
def one_row_threads(kind: str, rows: int) -> Iterator[None]:
    """Around a forward: torch at one thread when OpenBLAS does this step's products (one row), so the two
    thread pools do not spin against each other; torch's thread count is put back afterwards."""
    if kind != "openblas-gemv" or rows != 1:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
