"""own_engine's own fp32 linear kernel for CPUs with AVX-512: one packed layout, fast at every row count.

The oneDNN kernel (`own_engine.cpu_linear.PackedLinear`) reads the weights of a batch-1 decode step well
below memory speed: on the 2-core AMD EPYC (Zen 4) CI machine, one token through small-100m's 49 linears
(351 MB) took 13.7 ms through packed oneDNN against 10.0 ms for this kernel, the time it takes to read
those weights at all, and 14.2 against 11.2 ms at 8 rows, with 64-256 rows level (0.98-1.03x)
(`benchmarks/linear_layouts.py`; benchmarks/RESULTS.md, "own_engine's own linear kernel"). A kernel for
one row alone would need a second, plain copy of the weights (packing pays from 2 rows up); this one
keeps one copy, in its own layout (`kernels/panel_linear.c` says which), for every step.

It is C, built at first use with the machine's C compiler (`$CC`, else `cc`) into
`$ADVISOR_HOME/kernels/` and loaded with ctypes, so installing advisor needs no compiler. Where it can't
be used (no compiler, no AVX-512F, not Linux, a build error, or a probe that disagrees with F.linear) the
engine keeps oneDNN and says why in `describe()["linear_kernel_note"]`.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from own_engine.model import Linear
from own_engine.paths import advisor_home

SOURCE = Path(__file__).with_name("kernels") / "panel_linear.c"
CFLAGS = ["-O3", "-mavx512f", "-mfma", "-fopenmp", "-shared", "-fPIC"]


@dataclass(frozen=True)
class PanelKernel:
    lib: ctypes.CDLL
    group: int  # outputs per packed group


@functools.cache
def panel_kernel() -> PanelKernel | str:
    """The built and probed kernel, or why there is none (one line). Built once per machine, loaded once per
    process; after torch, so its libgomp is torch's."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"the own linear kernel is built for Linux on x86-64, not {platform.system()} {platform.machine()}"
    cpuinfo = Path("/proc/cpuinfo")
    if "avx512f" not in (cpuinfo.read_text().split() if cpuinfo.is_file() else []):
        return "this CPU has no AVX-512F, which the own linear kernel needs"
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        return "no C compiler (cc or $CC) to build the own linear kernel"
    source = SOURCE.read_bytes()
    tag = hashlib.sha256(source + " ".join(CFLAGS).encode()).hexdigest()[:16]
    so = advisor_home() / "kernels" / f"panel_linear-{tag}.so"
    if not so.is_file():
        so.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=so.parent) as tmp:
            out = Path(tmp) / so.name
            done = subprocess.run([cc, *CFLAGS, "-o", str(out), str(SOURCE)], capture_output=True, text=True)
            if done.returncode != 0:
                first = (done.stderr.strip().splitlines() or ["no message"])[0]
                return f"building the own linear kernel with {cc} failed: {first}"
            os.replace(out, so)  # atomic: a process building beside this one loads a whole file either way
    try:
        lib = ctypes.CDLL(str(so))
    except OSError as e:
        return f"loading the own linear kernel failed: {e}"
    lib.panel_linear.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_long] * 3 + [ctypes.c_int]
    lib.panel_linear.restype = None
    kernel = PanelKernel(lib, lib.panel_linear_group())
    if not _agrees_with_f_linear(kernel):
        return "the own linear kernel disagreed with F.linear on a probe"
    return kernel


def pack_weight(weight: torch.Tensor, group: int) -> torch.Tensor:
    """[N, K] -> [ceil(N / group), K, group]: groups of `group` outputs, k-major inside, zeros past N."""
    n, k = weight.shape
    full, rest = divmod(n, group)
    packed = torch.empty(full + (rest > 0), k, group, dtype=weight.dtype)
    if full:
        packed[:full] = weight[: full * group].reshape(full, group, k).transpose(1, 2)
    if rest:
        packed[full].zero_()
        packed[full, :, :rest] = weight[full * group:].t()
    return packed


class PanelLinear(nn.Module):
    """A `Linear` whose weight is in the own kernel's packed layout (CPU, fp32)."""

    def __init__(self, linear: Linear, kernel: PanelKernel) -> None:
        super().__init__()
        self.out_features, self.in_features = linear.weight.shape
        self.kernel = kernel
        packed = pack_weight(linear.weight.detach().contiguous(), kernel.group)
        self.weight = nn.Parameter(packed, requires_grad=False)  # a parameter, so the model's n_params counts it
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.dim() == 2 and x.is_contiguous()  # the engine's case: [tokens, features], kept lean (49 calls a step)
        x2 = x if flat else x.reshape(-1, self.in_features).contiguous()
        rows = x2.shape[0]
        y = x2.new_empty((rows, self.out_features))
        if rows:
            self.kernel.lib.panel_linear(x2.data_ptr(), self.weight.data_ptr(),
                                         None if self.bias is None else self.bias.data_ptr(), y.data_ptr(),
                                         rows, self.out_features, self.in_features, torch.get_num_threads())
        return y if flat else y.reshape(*x.shape[:-1], self.out_features)


def _agrees_with_f_linear(kernel: PanelKernel) -> bool:
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
