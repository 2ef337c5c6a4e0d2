"""own_engine's linear layers by row count, on random weights of a preset's shapes:
- its own AVX-512 kernel on its packed layout (`own_engine.kernels.panel_linear`, the engine's default where it
  builds): `own_panel` with each weight in its own allocation, `own_panel_huge` in one arena advised to
  transparent huge pages, as the engine keeps them;
- oneDNN on packed weights (the engine's fallback) and on plain weights;
- a plain AVX2 kernel for 1-8 rows (`skinny_linear.c`).

    python benchmarks/linear_layouts.py --preset small-100m --threads 2 --rows 1,2,4,8,16,64,256

For each row count: the time to run that many rows through every linear layer of the model plus its LM head
(qkv, o, gate_up, down per layer; 49 products for small-100m), median of --rounds, the candidates in a new
random order every round (this machine's speed drifts within minutes; a fixed order would hand the drift to
one of them). At one row, also the time to read the same weights tensor by tensor (a `sum` over each): the
most a GEMV over separate tensors can hope for. The question it answers: how far is each kernel from reading
the weights at memory speed, and what does a layout cost at larger row counts (the engine keeps one copy of
the weights)?

The own kernel is built as the engine builds it (`own_engine.kernels.native`; its columns are left out where it
can't be). The AVX2 kernel is built with `cc` into a temporary folder when there is a C compiler and the CPU
has AVX2 and FMA. Each is checked against F.linear before any timing. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cpu_kernels import linear_weights  # noqa: E402
from own_engine.kernels.cpu_linear import BATCH_HINT  # noqa: E402

SOURCE = Path(__file__).with_name("skinny_linear.c")


def skinny_kernel() -> tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], int] | None:
    """`skinny_linear.c` built and loaded after torch (so its libgomp is torch's), as f(x [M, K], w [N, K]) ->
    [M, N] and the most rows it takes; None without a C compiler or without AVX2/FMA."""
    cc = shutil.which("cc")
    cpuinfo = Path("/proc/cpuinfo")
    flags = set(cpuinfo.read_text().split()) if cpuinfo.is_file() else set()
    if cc is None or not {"avx2", "fma"} <= flags:
        return None
    so = Path(tempfile.mkdtemp(prefix="skinny-linear-")) / "skinny_linear.so"
    subprocess.run([cc, "-O3", "-mavx2", "-mfma", "-fopenmp", "-shared", "-fPIC", "-o", str(so), str(SOURCE)],
                   check=True)
    lib = ctypes.CDLL(str(so))
    fn = lib.skinny_linear
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_long] * 3
    max_rows = lib.skinny_linear_max_rows()

    def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        assert x.shape[0] <= max_rows and x.is_contiguous() and w.is_contiguous()
        y = torch.empty(x.shape[0], w.shape[0])
        fn(x.data_ptr(), w.data_ptr(), None, y.data_ptr(), x.shape[0], w.shape[0], w.shape[1])
        return y

    return linear, max_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="small-100m")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", default="1,2,4,8,16,64,256")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    try:
        rows = [int(r) for r in args.rows.split(",")]
    except ValueError:
        ap.error(f"--rows takes row counts separated by commas, got {args.rows!r}")
    if min(rows) < 1 or args.threads < 1 or args.rounds < 1:
        ap.error("--rows, --threads and --rounds must be >= 1")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    weights = linear_weights(args.preset)
    packed = [torch.ops.mkldnn._reorder_linear_weight(w, BATCH_HINT) for w in weights]
    from own_engine.kernels.backends import native_kernels
    from own_engine.kernels.native import NativeKernels
    from own_engine.kernels.panel_linear import huge_page_floats, pack_weight, packed_numel

    own = native_kernels()
    own_packed, own_huge = [], []
    if isinstance(own, NativeKernels):
        own_packed = [pack_weight(w, own.group) for w in weights]  # each in its own torch allocation (4 KiB pages)
        arena = huge_page_floats(sum(packed_numel(w, own.group) for w in weights))  # the engine's: one arena
        at = 0
        for w in weights:
            n = packed_numel(w, own.group)
            own_huge.append(pack_weight(w, own.group, arena[at:at + n]))
            at += n
    built = skinny_kernel()
    skinny, max_rows = built if built is not None else (None, 0)
    wbytes = sum(w.numel() * 4 for w in weights)
    results = []
    for m in rows:
        xs = [torch.randn(m, w.shape[1]) for w in weights]
        cands: dict[str, Callable[[], object]] = {
            "onednn_packed": lambda xs=xs: [torch.ops.mkldnn._linear_pointwise(x, p, None, "none", [], "")
                                            for p, x in zip(packed, xs, strict=True)],
            "onednn_plain": lambda xs=xs: [torch.ops.mkldnn._linear_pointwise(x, w, None, "none", [], "")
                                           for w, x in zip(weights, xs, strict=True)],
        }
        if isinstance(own, NativeKernels):
            def own_linear(x: torch.Tensor, p: torch.Tensor, n: int) -> torch.Tensor:
                y = torch.empty(x.shape[0], n)
                own.lib.panel_linear(x.data_ptr(), p.data_ptr(), None, y.data_ptr(), x.shape[0], n, x.shape[1], 0,
                                     torch.get_num_threads())
                return y

            for w, p, x in zip(weights[:4], own_packed, xs[:4], strict=False):
                if not torch.allclose(own_linear(x, p, w.shape[0]), F.linear(x, w), atol=1e-3, rtol=1e-4):
                    raise SystemExit(f"linear_layouts: the own kernel disagrees with F.linear at {m} rows")
            cands["own_panel"] = lambda xs=xs, f=own_linear: [f(x, p, w.shape[0])
                                                              for w, p, x in zip(weights, own_packed, xs, strict=True)]
            cands["own_panel_huge"] = lambda xs=xs, f=own_linear: [
                f(x, p, w.shape[0]) for w, p, x in zip(weights, own_huge, xs, strict=True)]
        if skinny is not None and m <= max_rows:
            for w, x in zip(weights[:4], xs[:4], strict=True):  # every shape once, before any timing
                if not torch.allclose(skinny(x, w), F.linear(x, w), atol=1e-4, rtol=1e-4):
                    raise SystemExit(f"linear_layouts: the C kernel disagrees with F.linear at {m} rows")
            cands["skinny_c"] = lambda xs=xs: [skinny(x, w) for w, x in zip(weights, xs, strict=True)]
        if m == 1:
            cands["read_each"] = lambda: [w.sum() for w in weights]
        times: dict[str, list[float]] = {k: [] for k in cands}
        for fn in cands.values():
            fn()  # warm-up: oneDNN builds its primitives
        for _ in range(args.rounds):
            order = list(cands.items())
            random.shuffle(order)
            for name, fn in order:
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
        med = {k: statistics.median(v) for k, v in times.items()}
        r = {"rows": m, **{f"{k}_ms": v * 1e3 for k, v in med.items()},
             **{f"{k}_gbs": wbytes / v / 1e9 for k, v in med.items()}}
        results.append(r)
        print(f"{m} rows: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in med.items()), file=sys.stderr)
    print(json.dumps({"preset": args.preset, "threads": args.threads, "rounds": args.rounds, "torch": torch.__version__,
                      "weights_mb": wbytes / 1e6, "skinny_c": skinny is not None,
                      "own_panel": own if isinstance(own, str) else True, "results": results}, indent=1))


if __name__ == "__main__":
    main()
