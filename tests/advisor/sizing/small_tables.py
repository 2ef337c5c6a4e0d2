"""A small operator table built from formulas, so a test knows every measured value it interpolates."""

from __future__ import annotations

import itertools

import numpy as np

from advisor.sizing.tables import OpTables

AXIS = np.array([1, 16, 256, 4096])
S_AXIS = np.array([16, 256, 4096])


def gemm_ms(m: float, n: float, k: float) -> float:
    return 0.01 + m * n * k / 1e12  # a fixed launch cost plus work


def ctx_ms(b: float, s: float, nh: int) -> float:
    return 0.005 + b * s * s * nh / 1e10


def gen_ms(b: float, s: float, nkv: int) -> float:
    return 0.004 + b * s * nkv / 1e9


def small_tables(gpu: str = "test_gpu") -> OpTables:
    grid = np.array([[[gemm_ms(m, n, k) for k in AXIS] for n in AXIS] for m in AXIS], dtype=np.float64)[None]
    ctx, gen = [], []
    for b, s, (nh, nkv) in itertools.product([1, 8], S_AXIS, [(8, 8), (32, 8)]):
        ctx.append((b, s, nh, nkv, ctx_ms(b, s, nh)))
        gen.append((b, s, nh, nkv, gen_ms(b, s, nkv)))
    arrays = {"gemm_dtypes": np.array(["bfloat16"]), "gemm_m": AXIS, "gemm_n": AXIS, "gemm_k": AXIS, "gemm_ms": grid,
              "ar_gpus": np.array([2, 2, 8, 8]), "ar_elems": np.array([1_000, 1_000_000, 1_000, 1_000_000]),
              "ar_ms": np.array([0.01, 0.1, 0.02, 0.3])}
    for prefix, rows in (("ctx", ctx), ("gen", gen)):
        a = np.array(rows)
        arrays.update({f"{prefix}_b": a[:, 0], f"{prefix}_s": a[:, 1], f"{prefix}_nh": a[:, 2].astype(int),
                       f"{prefix}_nkv": a[:, 3].astype(int), f"{prefix}_hd": np.full(len(a), 128),
                       f"{prefix}_kvfp8": np.zeros(len(a), dtype=int), f"{prefix}_ms": a[:, 4]})
    return OpTables(gpu, "test", "0", arrays)
