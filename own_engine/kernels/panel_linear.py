"""own_engine's own fp32 linear kernel for CPUs with AVX-512: one packed layout, fast at every row count.

The oneDNN kernel (`own_engine.kernels.cpu_linear.PackedLinear`) reads the weights of a batch-1 decode step well
below memory speed: on the 2-core AMD EPYC (Zen 4) CI machine, one token through small-100m's 49 linears
(351 MB) took 14.0 ms through packed oneDNN against 10.1 ms for this kernel, the time it takes to read
those weights at all (10.3 ms), and 14.4 against 11.1 ms at 8 rows, with 64-256 rows level (0.97-1.00x)
(`benchmarks/linear_layouts.py`; benchmarks/history/own_serving.md, "own_engine's native kernels"). A kernel for
one row alone would need a second, plain copy of the weights (packing pays from 2 rows up); this one
keeps one copy, in its own layout (`kernels/panel_linear.c` says which), for every step.

It is C (`kernels/panel_linear.c`), built at first use with own_engine's other native kernels
(`own_engine.kernels.native`, which also says what happens where it can't be built: the engine keeps oneDNN).
"""

from __future__ import annotations

import mmap
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from own_engine.kernels.native import NativeKernels
from own_engine.model.llama import Linear

HUGE_PAGE = 2 << 20


def huge_page_floats(n: int) -> torch.Tensor:
    """n fp32 values (uninitialised) in anonymous memory advised to transparent huge pages, 2 MiB aligned
    (Linux; elsewhere, or if the advice fails, plain torch.empty). The engine keeps all packed weights in one
    such arena: streamed front to back every step, they read 1-2% faster than in 4 KiB pages in
    `benchmarks/linear_layouts.py` (up to ~5% in a one-off A/B; benchmarks/history/own_serving.md, "own_engine's native
    kernels"), and one arena wastes under 2 MiB where one mapping per tensor could waste ~2 MiB each."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is None or n == 0:
        return torch.empty(n)
    try:
        buf = mmap.mmap(-1, n * 4 + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        buf.madvise(advice)
    except (OSError, ValueError):
        return torch.empty(n)
    base = torch.frombuffer(buf, dtype=torch.uint8, count=1).data_ptr()
    return torch.frombuffer(buf, dtype=torch.float32, count=n, offset=-base % HUGE_PAGE)  # keeps buf alive


def packed_numel(weight: torch.Tensor, group: int) -> int:
    n, k = weight.shape
    return -(-n // group) * k * group


def pack_weight(weight: torch.Tensor, group: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """[N, K] -> [ceil(N / group), K, group]: groups of `group` outputs, k-major inside, zeros past N; written
    into `out` (fp32, `packed_numel` values) when given."""
    n, k = weight.shape
    full, rest = divmod(n, group)
    shape = (full + (rest > 0), k, group)
    packed = torch.empty(shape, dtype=weight.dtype) if out is None else out.view(shape)
    if full:
        packed[:full] = weight[: full * group].reshape(full, group, k).transpose(1, 2)
    if rest:
        packed[full].zero_()
        packed[full, :, :rest] = weight[full * group:].t()
    return packed


class PanelLinear(nn.Module):
    """A `Linear` whose weight is in the own kernel's packed layout (CPU, fp32)."""

    def __init__(self, linear: Linear, kernel: NativeKernels, out: torch.Tensor | None = None) -> None:
        super().__init__()
        self.out_features, self.in_features = linear.weight.shape
        self.kernel = kernel
        packed = pack_weight(linear.weight.detach().contiguous(), kernel.group, out)
        self.weight = nn.Parameter(packed, requires_grad=False)  # a parameter, so the model's n_params counts it
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.dim() == 2 and x.is_contiguous()  # the engine's case: [tokens, features], kept lean (49 calls a step)
        x2 = x if flat else x.reshape(-1, self.in_features).contiguous()
        y = x2.new_empty((x2.shape[0], self.out_features))
        self._run(x2, y, accumulate=False)
        return y if flat else y.reshape(*x.shape[:-1], self.out_features)

    def add_to(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """y += self(x) in one pass (the decoder's residual adds): x [rows, in], y [rows, out], both contiguous."""
        assert x.is_contiguous() and y.is_contiguous() and y.shape == (x.shape[0], self.out_features)
        self._run(x, y, accumulate=True)

    def _run(self, x: torch.Tensor, y: torch.Tensor, accumulate: bool) -> None:
        if x.shape[0]:
            self.kernel.lib.panel_linear(x.data_ptr(), self.weight.data_ptr(),
                                         None if self.bias is None else self.bias.data_ptr(), y.data_ptr(),
                                         x.shape[0], self.out_features, self.in_features, int(accumulate),
                                         torch.get_num_threads())


def panel_linears_in_one_arena(weights: list[torch.Tensor], kernel: NativeKernels) -> Callable[[Linear], PanelLinear]:
    """A maker of `PanelLinear`s for these weights (in any order) that puts their packed weights one after
    another in one huge-page arena (`huge_page_floats`)."""
    store = huge_page_floats(sum(packed_numel(w, kernel.group) for w in weights))
    at = 0

    def make(linear: Linear) -> PanelLinear:
        nonlocal at
        n = packed_numel(linear.weight, kernel.group)
        if at + n > store.numel():
            raise ValueError("panel_linears_in_one_arena: a linear that was not in the weights it was sized for")
        at += n
        return PanelLinear(linear, kernel, store[at - n:at])

    return make


def agrees_with_f_linear(kernel: NativeKernels) -> bool:
    """Tails in every dimension (N not a multiple of the group or of 16, K past one k block, rows past one
    micro-kernel), with and without a bias."""
    gen = torch.Generator().manual_seed(0)
    for n, k, rows, bias in ((100, 24, 7, True), (16, 1100, 1, False), (70, 33, 13, False)):
        probe = Linear(k, n, bias, torch.float32)
        with torch.no_grad():
            probe.weight.copy_(torch.randn(n, k, generator=gen))
            if probe.bias is not None:
                probe.bias.copy_(torch.randn(n, generator=gen))
            x = torch.randn(rows, k, generator=gen)
            if not torch.allclose(PanelLinear(probe, kernel)(x), F.linear(x, probe.weight, probe.bias),
                                  atol=1e-3, rtol=1e-4):
                return False
    return True
