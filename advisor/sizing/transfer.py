"""Operator times on a GPU without tables, transferred from the nearest GPU with tables by their peaks.

Each measured time is scaled by the ratio of the two GPUs' ideal (roofline) times for the same operator,
so the measured GPU's utilisation carries over: a GEMM by its FLOPs at the dtype's tensor-core peak or its
bytes at the memory bandwidth, whichever bounds it; generation attention (reading the KV cache) by the
memory bandwidth; context attention by the BF16 peak; an all-reduce by the GPU-to-GPU link above the
smallest message's fixed latency. The error this adds is measured, not assumed: backtest.py predicts each
measured GPU from its nearest other one and the spread of those misses is the range of a transferred
estimate.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from advisor.sizing.tables import OpTables, UnsupportedOp, load, source

GPUS_FILE = Path(__file__).parent / "data" / "gpus.yaml"
_ACT_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "nvfp4": 1.0, "int4_wo": 2.0}
_WEIGHT_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "nvfp4": 0.5625, "int4_wo": 0.52}


@dataclass(frozen=True)
class Peaks:
    """A GPU's dense peaks (None: the part has no such tensor cores)."""

    name: str
    bf16_tflops: float
    fp8_tflops: float | None
    fp4_tflops: float | None
    mem_bw_gbps: float
    link_gbps: float | None  # one direction, per GPU; None: unknown (no TP group is transferred)

    def tflops(self, dtype: str) -> float | None:
        return {"bfloat16": self.bf16_tflops, "int4_wo": self.bf16_tflops, "fp8": self.fp8_tflops,
                "nvfp4": self.fp4_tflops}[dtype]


@functools.cache
def gpus() -> dict:
    return yaml.safe_load(GPUS_FILE.read_text())


def measured_peaks(gpu: str) -> Peaks:
    g = gpus()["measured"][gpu]
    return Peaks(gpu, g["bf16_tflops"], g["fp8_tflops"], g["fp4_tflops"], g["mem_bw_gbps"], g["link_gbps"])


def nearest_measured(target: Peaks, engine: str, exclude: str | None = None) -> str:
    """The GPU with `engine` tables whose bandwidth and BF16 peak are closest to `target`'s (log distance)."""
    have = [g for g in source()["tables"] if engine in source()["tables"][g] and g != exclude]
    if not have:
        raise UnsupportedOp(f"no GPU has {engine} tables to transfer from")

    def dist(g: str) -> float:
        p = measured_peaks(g)
        return abs(math.log(p.mem_bw_gbps / target.mem_bw_gbps)) + abs(math.log(p.bf16_tflops / target.bf16_tflops))
    return min(have, key=dist)


def _gemm_ideal_s(p: Peaks, m: float, n: float, k: float, dtype: str) -> float:
    tflops = p.tflops(dtype)
    if tflops is None:
        raise UnsupportedOp(f"{p.name} has no {dtype} tensor cores")
    flops_s = 2.0 * m * n * k / (tflops * 1e12)
    bytes_s = (m * k * _ACT_BYTES[dtype] + k * n * _WEIGHT_BYTES[dtype] + 2.0 * m * n) / (p.mem_bw_gbps * 1e9)
    return max(flops_s, bytes_s)


@dataclass(frozen=True)
class TransferredOps:
    """`src`'s measured tables, scaled to the GPU with peaks `dst` (see the module docstring)."""

    src: OpTables
    src_peaks: Peaks
    dst: Peaks

    def gemm_ms(self, m: float, n: float, k: float, dtype: str) -> float:
        t = self.src.gemm_ms(m, n, k, dtype)
        return t * _gemm_ideal_s(self.dst, m, n, k, dtype) / _gemm_ideal_s(self.src_peaks, m, n, k, dtype)

    def context_attention_ms(self, batch: float, length: float, nh: int, nkv: int, hd: int, kv_fp8: bool) -> float:
        t = self.src.context_attention_ms(batch, length, nh, nkv, hd, kv_fp8)
        return t * self.src_peaks.bf16_tflops / self.dst.bf16_tflops

    def generation_attention_ms(self, batch: float, context: float, nh: int, nkv: int, hd: int,
                                kv_fp8: bool) -> float:
        t = self.src.generation_attention_ms(batch, context, nh, nkv, hd, kv_fp8)
        return t * self.src_peaks.mem_bw_gbps / self.dst.mem_bw_gbps

    def allreduce_ms(self, elements: float, tp: int) -> float:
        if tp <= 1:
            return 0.0
        if self.dst.link_gbps is None or self.src_peaks.link_gbps is None:
            raise UnsupportedOp(f"{self.dst.name}: GPU-to-GPU bandwidth unknown, so no TP group is estimated")
        t, t0 = self.src.allreduce_ms(elements, tp), self.src.allreduce_ms(1.0, tp)
        return t0 + max(t - t0, 0.0) * self.src_peaks.link_gbps / self.dst.link_gbps


def transferred(dst: Peaks, engine: str, exclude: str | None = None) -> TransferredOps:
    """`engine`'s tables of the nearest measured GPU, transferred to `dst`."""
    src = nearest_measured(dst, engine, exclude)
    return TransferredOps(load(src, engine), measured_peaks(src), dst)
