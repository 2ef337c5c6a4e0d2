"""own_engine's native CPU kernels (`kernels/*.c`): built at first use, loaded with ctypes, probed, or a reason why not.

All fp32 and AVX-512F, all on torch's own OpenMP thread pool:
- `panel_linear`: the linear layers on one packed layout (`own_engine.kernels.panel_linear`), optionally adding into
  their output (the residual);
- `decode_attention`: every decode row of a step over its paged KV cache in one call per layer, where PyTorch
  needs one SDPA call per sequence; `chunk_attention`: a prefill chunk over its cache in one call
  (`own_engine.model.paged_attention`);
- `layer_ops`: RMSNorm, RoPE with the write of the new K/V into the cache, SiLU(gate) * up: the decoder
  layer's work between its linears (`own_engine.kernels.native_layer`);
- `decode_layers`: all of the above for every layer of a decode step in one call and one parallel region
  (`own_engine.kernels.native_layer.decode_layers_forward`).

They are C, built once per machine with the machine's C compiler (`$CC`, else `cc`) into
`$ADVISOR_HOME/kernels/` and loaded after torch (so their libgomp is torch's), so installing advisor needs no
compiler. Each is checked against PyTorch before use (the one-call decode step against the per-layer kernels, bit
for bit) by the check its own module holds, run by `own_engine.kernels.backends`. Where they can't be used (no compiler, no AVX-512F, not Linux on x86-64, a build error, or a probe
that disagrees) the engine runs on oneDNN, PyTorch's ops and SDPA and says why in
`describe()["linear_kernel_note"]`.
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

from model_cache.paths import advisor_home

SOURCES = sorted(Path(__file__).parent.glob("*.c"))
HEADERS = sorted(Path(__file__).parent.glob("*.h"))  # included by SOURCES: part of the build's hash
CFLAGS = ["-O3", "-mavx512f", "-mfma", "-fopenmp", "-shared", "-fPIC"]
NOT_HERE = ("has no AVX-512F", "no C compiler", "built for Linux on x86-64")  # what a machine may lack: not a fault

_P, _L, _I, _F = ctypes.c_void_p, ctypes.c_long, ctypes.c_int, ctypes.c_float
SIGNATURES = {  # argument types of each kernel function (the C declarations are in kernels/*.c)
    "panel_linear": [_P] * 4 + [_L] * 3 + [_I, _I],
    "decode_attention": [_P, _L] + [_P] * 5 + [_L] * 7 + [_I],
    "chunk_attention": [_P, _L, _P, _P, _P, _L, _L, _P] + [_L] * 6 + [_I],
    "rms_norm": [_P] * 3 + [_L] * 2 + [_F, _I],
    "rope_store": [_P, _L, _L, _L, _L, _P, _P, _P, _P, _P, _I],
    "silu_mul": [_P, _P, _L, _L, _I],
    "decode_layers": [_P, _L, _L, _P] + [_L] * 5 + [_F] + [_P] * 4 + [_L, _P, _L, _P, _I],
}
RETURN_STATUS = {"decode_attention", "chunk_attention", "decode_layers"}  # 0, or -1 when a buffer could not be allocated


@dataclass(frozen=True)
class NativeKernels:
    lib: ctypes.CDLL
    group: int  # outputs per packed group of `panel_linear`


@functools.cache
def load_native() -> NativeKernels | str:
    """The built and loaded kernels, not yet checked, or why there are none (one line). Built once per machine,
    loaded once per process. This loader imports none of the kernels' users: each backend checks itself
    (`own_engine.kernels.backends.native_kernels` runs the checks and is what the engine uses)."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        here = f"{platform.system()} {platform.machine()}"
        return f"own_engine's native kernels are built for Linux on x86-64, not {here}"
    cpuinfo = Path("/proc/cpuinfo")
    if "avx512f" not in (cpuinfo.read_text().split() if cpuinfo.is_file() else []):
        return "this CPU has no AVX-512F, which own_engine's native kernels need"
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        return "no C compiler (cc or $CC) to build own_engine's native kernels"
    digest = hashlib.sha256(" ".join(CFLAGS).encode())
    for src in SOURCES + HEADERS:
        digest.update(src.name.encode() + src.read_bytes())
    so = advisor_home() / "kernels" / f"own_engine-{digest.hexdigest()[:16]}.so"
    if not so.is_file():
        so.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=so.parent) as tmp:
            out = Path(tmp) / so.name
            done = subprocess.run([cc, *CFLAGS, "-o", str(out), *map(str, SOURCES), "-lm"], capture_output=True,
                                  text=True)
            if done.returncode != 0:
                first = (done.stderr.strip().splitlines() or ["no message"])[0]
                return f"building own_engine's native kernels with {cc} failed: {first}"
            os.replace(out, so)  # atomic: a process building beside this one loads a whole file either way
    try:
        lib = ctypes.CDLL(str(so))
    except OSError as e:
        return f"loading own_engine's native kernels failed: {e}"
    for name, argtypes in SIGNATURES.items():
        getattr(lib, name).argtypes = argtypes
        getattr(lib, name).restype = _I if name in RETURN_STATUS else None
    return NativeKernels(lib, lib.panel_linear_group())
