"""own_engine's attention over its paged KV cache: the native kernels against PyTorch's SDPA, per layer call.

    python benchmarks/native_attention.py --threads 2

Two cases, on small-100m's head layout by default (12 query heads, 4 KV heads, head size 64, blocks of 16),
blocks scattered over the cache as a busy engine hands them out:

- decode: B sequences, one query each, over contexts of the given lengths. PyTorch: one SDPA per sequence on
  its gathered blocks (`decode_attention_runs`, a run per sequence: the CPU route for unequal contexts); native:
  `native_decode_attention`, one call for all rows;
- prefill chunk: n new rows after `cached` tokens, causal. PyTorch: `chunk_attention` (SDPA, with a mask when
  cached > 0); native: `native_chunk_attention`.

With --baseline-kernels DIR (another checkout's own_engine/kernels, e.g. from `git worktree add`), that
checkout's kernels are built here with the same flags and timed as a third side, `baseline`, in the same rounds:
a kernel change against the kernels before it, in one run.

Every side is checked against SDPA before timing. Each figure: the median of --rounds timings of --calls calls,
the sides in a new random order every round (this machine's speed drifts within minutes). Prints one line per
case and one JSON document.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from own_engine.kernels.backends import native_kernels  # noqa: E402
from own_engine.kernels.native import CFLAGS, RETURN_STATUS, SIGNATURES, NativeKernels  # noqa: E402
from own_engine.model.paged_attention import (  # noqa: E402
    ChunkMeta,
    DecodeRun,
    PagedMeta,
    chunk_attention,
    decode_attention_runs,
    native_chunk_attention,
    native_decode_attention,
)

DECODE = ((1, 128), (1, 512), (8, 128), (8, 512))  # (sequences, context of each)
CHUNKS = ((100, 0), (256, 0), (100, 300), (512, 512))  # (new rows, tokens already cached)


def baseline_kernels(src: Path, out: Path) -> NativeKernels:
    """Another checkout's kernels (its kernels/*.c and *.h), built here with the same flags, as a third side."""
    import ctypes
    import subprocess

    so = out / "baseline.so"
    cmd = ["cc", *CFLAGS, "-o", str(so), *map(str, sorted(src.glob("*.c"))), "-lm"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"native_attention: building --baseline-kernels {src} failed: {done.stderr.strip()[:300]}")
    lib = ctypes.CDLL(str(so))
    for name in ("decode_attention", "chunk_attention"):
        getattr(lib, name).argtypes = SIGNATURES[name]
        getattr(lib, name).restype = ctypes.c_int if name in RETURN_STATUS else None
    return NativeKernels(lib, 64)


def timed(fn, calls: int) -> float:
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--heads", default="12,4,64", help="query heads, KV heads, head size")
    ap.add_argument("--baseline-kernels", type=Path, metavar="DIR",
                    help="another checkout's own_engine/kernels, timed as a third side (`baseline`)")
    ap.add_argument("--chunks", default=",".join(f"{n}:{c}" for n, c in CHUNKS),
                    help="prefill-chunk cases, NEW_ROWS:CACHED,... (contexts up to 6400)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    native = native_kernels()
    if isinstance(native, str):
        raise SystemExit(f"native_attention: {native}")
    hq, hkv, d = map(int, args.heads.split(","))
    try:
        chunks = [tuple(map(int, c.split(":"))) for c in args.chunks.split(",")]
    except ValueError:
        raise SystemExit(f"native_attention: --chunks wants NEW_ROWS:CACHED,..., got {args.chunks!r}") from None
    if any(n < 1 or c < 0 or n + c > 6400 for n, c in chunks):
        raise SystemExit("native_attention: every --chunks case needs NEW_ROWS >= 1, CACHED >= 0, a sum <= 6400")
    kernels = {"native": native}
    tmp = tempfile.TemporaryDirectory()
    if args.baseline_kernels is not None:
        if not any(args.baseline_kernels.glob("*.c")):
            raise SystemExit(f"native_attention: no kernels (*.c) in --baseline-kernels {args.baseline_kernels}")
        kernels["baseline"] = baseline_kernels(args.baseline_kernels, Path(tmp.name))
    block_size, blocks = 16, 400
    gen = torch.Generator().manual_seed(0)
    kc, vc = (torch.randn(blocks, block_size, hkv, d, generator=gen) for _ in range(2))
    order = torch.randperm(blocks, generator=gen)
    cases = []
    for b, ctx in DECODE:
        need = -(-ctx // block_size)
        tables = [order[i * need:(i + 1) * need] for i in range(b)]
        q = torch.randn(b, hq, d, generator=gen)
        meta = PagedMeta(slot_mapping=torch.zeros(0, dtype=torch.long), num_decodes=b,
                         block_tables=torch.stack(tables), lens=torch.full((b,), ctx))
        contexts = [DecodeRun(ctx, block_ids=t) for t in tables]
        cases.append((f"decode B={b} context={ctx}", {
            "sdpa": lambda q=q, c=contexts: decode_attention_runs(0, q, kc, vc, c),
            **{side: lambda q=q, m=meta, kern=kern: native_decode_attention(kern, q, kc, vc, m)
               for side, kern in kernels.items()}}))
    for n, cached in chunks:
        ctx = cached + n
        table = order[: -(-ctx // block_size)]
        slots = torch.tensor([int(table[p // block_size]) * block_size + p % block_size for p in range(cached, ctx)])
        k, v = kc.view(-1, hkv, d)[slots], vc.view(-1, hkv, d)[slots]
        q = torch.randn(n, hq, d, generator=gen)
        meta = ChunkMeta(0, n, cached, block_ids=table)
        if cached:
            meta.mask = torch.arange(ctx)[None, :] <= torch.arange(cached, ctx)[:, None]
        cases.append((f"chunk n={n} cached={cached}", {
            "sdpa": lambda q=q, k=k, v=v, m=meta: chunk_attention(q, k, v, kc, vc, m),
            **{side: lambda q=q, m=meta, kern=kern: native_chunk_attention(kern, q, kc, vc, m)
               for side, kern in kernels.items()}}))
    results = []
    for name, sides in cases:
        want = sides["sdpa"]()
        for side in kernels:
            torch.testing.assert_close(sides[side](), want, atol=1e-4, rtol=1e-3)
        times: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(args.rounds):
            for side in random.sample(list(sides), len(sides)):
                times[side].append(timed(sides[side], args.calls))
        row = {"case": name, **{f"{s}_us": 1e6 * statistics.median(t) for s, t in times.items()}}
        row["sdpa_over_native"] = row["sdpa_us"] / row["native_us"]
        line = f"{name}: SDPA {row['sdpa_us']:.0f} us, native {row['native_us']:.0f} us, {row['sdpa_over_native']:.2f}x"
        if "baseline" in sides:  # the per-round ratio: the two kernels' calls of one round side by side
            row["baseline_over_native"] = statistics.median(
                b / n for b, n in zip(times["baseline"], times["native"], strict=True))
            line += f"; baseline {row['baseline_us']:.0f} us, baseline / native {row['baseline_over_native']:.2f}x"
        results.append(row)
        print(line, flush=True)
    print(json.dumps({"threads": args.threads, "heads": [hq, hkv, d], "block_size": block_size,
                      "rounds": args.rounds, "calls": args.calls, "torch": torch.__version__, "results": results},
                     indent=1))


if __name__ == "__main__":
    main()
