"""This machine's speed at the kernels own_engine's CPU step is made of, at 1 and at N threads: tells the machine
from the code when own_engine's step time moves between runs (benchmarks/history/own_engine.md, "own_engine on CPU").

    python benchmarks/cpu_kernels.py --preset small-100m --threads 2

Per thread count, medians over --repeats after a warm-up:
- copy bandwidth of a --bandwidth-mb fp32 tensor (read + write bytes / s, as benchmarks/own_engine.py counts it)
  and read bandwidth (a sum over it);
- GEMV: one token through every linear layer of the preset's shape plus the LM head (random weights of the
  same shapes: qkv, o, gate_up, down per layer), through plain F.linear (MKL) and through oneDNN with packed
  weights (own_engine.kernels.cpu_linear's op), in ms and in GB/s of weights read; beside them the same weights read
  one tensor at a time (a `sum` over each), the rate a GEMV over the model's separate tensors can hope for
  (`benchmarks/linear_layouts.py` compares kernels by row count);
- GEMM: a 128-token prefill-shaped product (128 x hidden by hidden x 2 ffn), in GFLOPS.
CPU steal time over each thread count comes from /proc/stat, and the CPU model, flags of note and the boot
time are recorded, so two runs can be told apart as machines. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

# this folder holds a script named own_engine.py: the package must win the import
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model_cache.presets import get_preset  # noqa: E402


def median_s(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cpu_jiffies() -> tuple[int, int]:
    """(steal, total) jiffies of the whole machine since boot; (0, 0) where /proc/stat is missing."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except OSError:
        return 0, 0
    return fields[7], sum(fields)


def machine() -> dict:
    info: dict = {"processor": platform.processor(), "torch": torch.__version__,
                  "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    try:
        text = Path("/proc/cpuinfo").read_text()
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        info.update(model_name=fields.get("model name"), cpu_family=fields.get("cpu family"),
                    model=fields.get("model"), mhz=fields.get("cpu MHz"),
                    flags=sorted(f for f in fields.get("flags", "").split() if f.startswith(("avx", "fma", "amx"))))
        up_s = float(Path("/proc/uptime").read_text().split()[0])
        info["booted_utc"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() - up_s))
    except OSError:
        pass
    return info


def linear_weights(preset: str) -> list[torch.Tensor]:
    """Random fp32 weights of every linear layer of the preset, plus its LM head ([out, in] as F.linear takes)."""
    p = get_preset(preset)
    h, kv, ff = p.hidden_size, p.head_dim * p.num_key_value_heads, p.intermediate_size
    ws = []
    for _ in range(p.num_hidden_layers):
        ws += [torch.randn(h + 2 * kv, h), torch.randn(h, h), torch.randn(2 * ff, h), torch.randn(h, ff)]
    return ws + [torch.randn(p.vocab_size, h)]


def measure(threads: int, weights: list[torch.Tensor], packed: list[torch.Tensor] | None,
            big: tuple[torch.Tensor, torch.Tensor], gemm: tuple[torch.Tensor, torch.Tensor], repeats: int,
            max_threads: int) -> dict:
    torch.set_num_threads(threads)
    steal0, total0 = cpu_jiffies()
    src, dst = big
    wbytes = sum(w.numel() * w.element_size() for w in weights)
    xs = {w.shape[1]: torch.randn(1, w.shape[1]) for w in weights}
    r: dict = {"threads": threads}
    r["copy_gbs"] = 2 * src.numel() * 4 / median_s(lambda: dst.copy_(src), repeats) / 1e9
    r["read_gbs"] = src.numel() * 4 / median_s(src.sum, repeats) / 1e9
    s = median_s(lambda: [w.sum() for w in weights], repeats)
    r["read_each_ms"], r["read_each_gbs"] = s * 1e3, wbytes / s / 1e9
    s = median_s(lambda: [F.linear(xs[w.shape[1]], w) for w in weights], repeats)
    r["gemv_mkl_ms"], r["gemv_mkl_gbs"] = s * 1e3, wbytes / s / 1e9
    if packed is not None:
        s = median_s(lambda: [torch.ops.mkldnn._linear_pointwise(xs[w.shape[1]], p, None, "none", [], "")
                              for w, p in zip(weights, packed, strict=True)], repeats)
        r["gemv_onednn_ms"], r["gemv_onednn_gbs"] = s * 1e3, wbytes / s / 1e9
    if threads == max_threads:  # numpy's BLAS pool is not torch's: measured once, at its own default size
        ws_np = [w.numpy() for w in weights]
        xs_np = {k: x[0].numpy() for k, x in xs.items()}
        s = median_s(lambda: [w @ xs_np[w.shape[1]] for w in ws_np], repeats)
        r["gemv_numpy_ms"], r["gemv_numpy_gbs"] = s * 1e3, wbytes / s / 1e9
    a, b = gemm
    s = median_s(lambda: [F.linear(a, b) for _ in range(10)], repeats)
    r["gemm_gflops"] = 10 * 2 * a.shape[0] * a.shape[1] * b.shape[0] / s / 1e9
    steal1, total1 = cpu_jiffies()
    r["steal_share"] = (steal1 - steal0) / max(1, total1 - total0)
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="small-100m", help="whose linear shapes the GEMV and GEMM use")
    ap.add_argument("--threads", type=int, default=2, help="measured at 1 thread and at this many")
    ap.add_argument("--bandwidth-mb", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    if args.threads < 1 or args.repeats < 1 or args.bandwidth_mb < 1:
        ap.error("--threads, --repeats and --bandwidth-mb must be >= 1")
    torch.manual_seed(0)
    weights = linear_weights(args.preset)
    onednn = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    packed = [torch.ops.mkldnn._reorder_linear_weight(w, 64) for w in weights] if onednn else None
    n = args.bandwidth_mb * 2**20 // 4
    big = (torch.randn(n), torch.empty(n))
    p = get_preset(args.preset)
    gemm = (torch.randn(128, p.hidden_size), torch.randn(2 * p.intermediate_size, p.hidden_size))
    results = [measure(t, weights, packed, big, gemm, args.repeats, args.threads) for t in sorted({1, args.threads})]
    for r in results:
        print(f"threads {r['threads']}: copy {r['copy_gbs']:.1f} GB/s, read {r['read_gbs']:.1f} GB/s, "
              f"read tensor by tensor {r['read_each_ms']:.1f} ms ({r['read_each_gbs']:.1f} GB/s), "
              f"GEMV MKL {r['gemv_mkl_ms']:.1f} ms ({r['gemv_mkl_gbs']:.1f} GB/s)"
              + (f", oneDNN packed {r['gemv_onednn_ms']:.1f} ms ({r['gemv_onednn_gbs']:.1f} GB/s)" if onednn else "")
              + (f", numpy {r['gemv_numpy_ms']:.1f} ms ({r['gemv_numpy_gbs']:.1f} GB/s)" if "gemv_numpy_ms" in r else "")
              + f", GEMM {r['gemm_gflops']:.0f} GFLOPS, steal {100 * r['steal_share']:.1f}%", file=sys.stderr)
    weights_mb = sum(w.numel() * w.element_size() for w in weights) / 1e6
    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    print(json.dumps({"machine": machine(), "numpy_blas": blas.get("name"), "preset": args.preset, "linear_weights_mb": weights_mb,
                      "settings": vars(args), "results": results}, indent=2))


if __name__ == "__main__":
    main()
