"""Measured operator latencies for one (GPU, engine) and interpolation between the measured points.

The tables are aiconfigurator's measurements (ai-dynamo/aiconfigurator, Apache-2.0; commit, paths and
licence in `data/tables/SOURCE.yaml`), packed by `scripts/pack_gpu_tables.py`. The interpolation is ours:

- an exact hit returns the measurement;
- between measured points, log-latency is interpolated linearly in the logs of the coordinates
  (trilinear for a GEMM's m, n, k; bilinear in batch and length for attention, then in the head count);
  a corner that was not measured drops out and the others are re-weighted;
- past the largest measured size the time grows in proportion to the work (a GEMM's m, n or k; attention's
  batch; context attention's length squared, generation attention's length), so the utilisation of the
  boundary point is held; below the smallest size the boundary's time is held (launch-bound).

What a table lacks is said, never guessed silently: `UnsupportedOp` names the missing dtype.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

DATA = Path(__file__).parent / "data" / "tables"


class UnsupportedOp(LookupError):
    """The tables hold no measurement this operator can be read from (say what is missing)."""


def _bracket(axis: np.ndarray, q: float) -> tuple[int, int, float, float]:
    """Indices (i0, i1), the weight of i1 in log space, and the work ratio past the top of the axis."""
    if q >= axis[-1]:
        return len(axis) - 1, len(axis) - 1, 0.0, q / float(axis[-1])
    if q <= axis[0]:
        return 0, 0, 0.0, 1.0
    i1 = int(np.searchsorted(axis, q))
    i0 = i1 - 1
    lo, hi = math.log(axis[i0]), math.log(axis[i1])
    return i0, i1, (math.log(q) - lo) / (hi - lo), 1.0


def _blend(corners: list[tuple[float, float]]) -> float:
    """exp of the weighted mean of log-latencies over the measured corners (weight, latency)."""
    pts = [(w, v) for w, v in corners if w > 0 and v == v and v > 0]
    if not pts:
        return math.nan
    tw = sum(w for w, _ in pts)
    return math.exp(sum(w * math.log(v) for w, v in pts) / tw)


@dataclass
class _Grid2:
    """One attention table slice: latency over (batch, length) for one head configuration."""

    b: np.ndarray
    s: np.ndarray
    ms: np.ndarray  # [len(b), len(s)], NaN where not measured

    def at(self, b: float, s: float, s_power: float) -> float:
        i0, i1, tb, rb = _bracket(self.b, b)
        j0, j1, ts, rs = _bracket(self.s, s)
        v = _blend([((1 - tb) * (1 - ts), self.ms[i0, j0]), ((1 - tb) * ts, self.ms[i0, j1]),
                    (tb * (1 - ts), self.ms[i1, j0]), (tb * ts, self.ms[i1, j1])])
        if v != v:  # no measured corner: the nearest measured point, scaled by the work
            ok = np.argwhere(~np.isnan(self.ms))
            d = [(abs(math.log(self.b[i] / b)) + abs(math.log(self.s[j] / s)), i, j) for i, j in ok]
            _, i, j = min(d)
            return float(self.ms[i, j]) * (b / self.b[i]) * (s / self.s[j]) ** s_power
        return v * rb * rs ** s_power


@dataclass
class OpTables:
    """The operator tables of one GPU and engine version; every method returns milliseconds."""

    gpu: str
    engine: str
    version: str
    arrays: dict[str, np.ndarray] = field(repr=False)
    _slices: dict[tuple[str, int, int, int, int], _Grid2] = field(default_factory=dict, repr=False)
    _pairs: dict[str, dict[tuple[int, int], set[tuple[int, int]]]] = field(default_factory=dict, repr=False)

    @property
    def gemm_dtypes(self) -> tuple[str, ...]:
        return tuple(str(x) for x in self.arrays["gemm_dtypes"])

    def gemm_ms(self, m: float, n: float, k: float, dtype: str) -> float:
        """y[m, n] = x[m, k] @ w[k, n] in `dtype` (bfloat16, fp8, nvfp4, int4_wo)."""
        if dtype not in self.gemm_dtypes:
            raise UnsupportedOp(f"no {dtype} GEMM measured on {self.gpu} with {self.engine} {self.version} "
                                f"(measured: {', '.join(self.gemm_dtypes)})")
        a = self.arrays
        grid = a["gemm_ms"][self.gemm_dtypes.index(dtype)]
        (i0, i1, ti, ri), (j0, j1, tj, rj), (l0, l1, tl, rl) = (
            _bracket(a["gemm_m"], m), _bracket(a["gemm_n"], n), _bracket(a["gemm_k"], k))
        corners = []
        for i, wi in ((i0, 1 - ti), (i1, ti)):
            for j, wj in ((j0, 1 - tj), (j1, tj)):
                for l_, wl in ((l0, 1 - tl), (l1, tl)):
                    corners.append((wi * wj * wl, float(grid[i, j, l_])))
        v = _blend(corners)
        if v != v:  # e.g. A100's int4 weight-only table covers only some shapes
            raise UnsupportedOp(f"no {dtype} GEMM measured near m={m:g} n={n:g} k={k:g} on {self.gpu} with "
                                f"{self.engine} {self.version}")
        return v * ri * rj * rl

    def _slice(self, op: str, hd: int, kv_fp8: int, nh: int, nkv: int) -> _Grid2 | None:
        key = (op, hd, kv_fp8, nh, nkv)
        if key not in self._slices:
            a = self.arrays
            sel = (a[f"{op}_hd"] == hd) & (a[f"{op}_kvfp8"] == kv_fp8) & (a[f"{op}_nh"] == nh) & (a[f"{op}_nkv"] == nkv)
            if not sel.any():
                return None
            b, s, ms = a[f"{op}_b"][sel], a[f"{op}_s"][sel], a[f"{op}_ms"][sel].astype(np.float64)
            bs, ss = np.unique(b), np.unique(s)
            grid = np.full((len(bs), len(ss)), np.nan)
            grid[np.searchsorted(bs, b), np.searchsorted(ss, s)] = ms
            self._slices[key] = _Grid2(bs.astype(np.float64), ss.astype(np.float64), grid)
        return self._slices[key]

    def _heads(self, op: str) -> dict[tuple[int, int], set[tuple[int, int]]]:
        """(head_dim, kv_fp8) -> the measured (query heads, KV heads) pairs of attention table `op`."""
        if op not in self._pairs:
            a = self.arrays
            out: dict[tuple[int, int], set[tuple[int, int]]] = {}
            for hd, kv, nh, nkv in zip(a[f"{op}_hd"], a[f"{op}_kvfp8"], a[f"{op}_nh"], a[f"{op}_nkv"], strict=True):
                out.setdefault((int(hd), int(kv)), set()).add((int(nh), int(nkv)))
            self._pairs[op] = out
        return self._pairs[op]

    def _attention(self, op: str, b: float, s: float, nh: int, nkv: int, hd: int, kv_fp8: bool) -> float:
        s_power = 2.0 if op == "ctx" else 1.0
        hd_t = min({h for h, _ in self._heads(op)}, key=lambda x: abs(math.log(x / hd)))
        kv = int(kv_fp8)
        if (hd_t, kv) not in self._heads(op):
            kv = 1 - kv  # the other KV dtype: the attention kernel's time differs by a few percent at most
        pairs = self._heads(op)[(hd_t, kv)]
        nkvs = sorted({y for _, y in pairs})
        nkv_t = min(nkvs, key=lambda y: (abs(math.log(y / nkv)), y))
        nhs = sorted(x for x, y in pairs if y == nkv_t)
        # work scales with the query heads in context attention (compute), with the KV heads in generation
        # attention (the KV cache read), and with the head size in both
        scale = hd / hd_t * (nkv / nkv_t if op == "gen" else 1.0)
        lo = [x for x in nhs if x <= nh]
        hi = [x for x in nhs if x >= nh]
        if lo and hi:
            h0, h1 = lo[-1], hi[0]
            g0, g1 = self._slice(op, hd_t, kv, h0, nkv_t), self._slice(op, hd_t, kv, h1, nkv_t)
            assert g0 is not None and g1 is not None
            v0, v1 = g0.at(b, s, s_power), g1.at(b, s, s_power)
            t = 0.0 if h0 == h1 else (math.log(nh) - math.log(h0)) / (math.log(h1) - math.log(h0))
            return math.exp((1 - t) * math.log(v0) + t * math.log(v1)) * scale
        h = lo[-1] if lo else hi[0]
        g = self._slice(op, hd_t, kv, h, nkv_t)
        assert g is not None
        head_ratio = nh / h if op == "ctx" or not lo else max(1.0, nh / h) ** 0.5
        return g.at(b, s, s_power) * scale * (head_ratio if op == "ctx" else max(1.0, head_ratio))

    def context_attention_ms(self, batch: float, length: float, nh: int, nkv: int, hd: int, kv_fp8: bool) -> float:
        """Causal self-attention over `length` new tokens in each of `batch` sequences (one layer, one GPU)."""
        return self._attention("ctx", batch, length, nh, nkv, hd, kv_fp8)

    def generation_attention_ms(self, batch: float, context: float, nh: int, nkv: int, hd: int,
                                kv_fp8: bool) -> float:
        """One new token per sequence attending to `context` cached tokens, for `batch` sequences (one layer)."""
        return self._attention("gen", batch, max(context, 1.0), nh, nkv, hd, kv_fp8)

    def allreduce_ms(self, elements: float, tp: int) -> float:
        """All-reduce of `elements` bf16 values across `tp` GPUs (0 on one GPU)."""
        if tp <= 1:
            return 0.0
        a = self.arrays
        gpus = sorted(set(int(x) for x in a["ar_gpus"]))
        g = min(gpus, key=lambda x: abs(math.log(x / tp)))
        sel = a["ar_gpus"] == g
        order = np.argsort(a["ar_elems"][sel])
        xs, ys = a["ar_elems"][sel][order].astype(np.float64), a["ar_ms"][sel][order].astype(np.float64)
        i0, i1, t, r = _bracket(xs, elements)
        v = math.exp((1 - t) * math.log(ys[i0]) + t * math.log(ys[i1])) * r
        # a ring all-reduce moves 2(n-1)/n of the message: scale when the degree itself was not measured
        return v * ((tp - 1) / tp) / ((g - 1) / g) if g != tp else v


@functools.cache
def source() -> dict:
    """SOURCE.yaml: where the tables come from (commit, licence) and which engine version each file holds."""
    return yaml.safe_load((DATA / "SOURCE.yaml").read_text())


def measured_gpus() -> tuple[str, ...]:
    return tuple(source()["tables"])


@functools.cache
def load(gpu: str, engine: str) -> OpTables:
    """The tables of `gpu` (aiconfigurator's name, e.g. h200_sxm) for `engine` (vllm, sglang, trtllm)."""
    entry = source()["tables"].get(gpu, {}).get(engine)
    if entry is None:
        raise UnsupportedOp(f"no {engine} tables for {gpu} (measured: "
                            + ", ".join(f"{g}: {'/'.join(e)}" for g, e in source()["tables"].items()) + ")")
    with np.load(DATA / entry["file"]) as z:
        arrays = {k: z[k] for k in z.files}
    return OpTables(gpu, engine, str(entry["version"]), arrays)
