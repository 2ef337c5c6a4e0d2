"""Pack the subset of aiconfigurator's measured operator tables that advisor ships (advisor/sizing/data/tables/).

aiconfigurator (ai-dynamo/aiconfigurator, Apache-2.0) publishes per-GPU operator timings measured on real
GPUs, as parquet under `aic-core/src/aiconfigurator_core/systems/data/<gpu>/<op>/<backend>/<version>/`.
This script reads those files from a git checkout of that repository (`git show`, no work tree needed) and
writes one compact `.npz` per (GPU, engine) with only what advisor's step model reads: GEMM latency on the
full (m, n, k) grid for the dtypes advisor sizes (bf16, fp8 per-tensor, nvfp4, int4 weight-only), context
and generation attention without a sliding window, and the engine's all-reduce (NCCL's where the engine has
none). Where a table has several kernels for one point, the fastest is kept (the engine picks its best).
Latencies stay in milliseconds as measured, stored as float16 (3 significant digits: 0.05%, far inside the
kernels' own run-to-run spread); nothing is fitted here.

    python scripts/pack_gpu_tables.py --repo /path/to/aiconfigurator/.git --out advisor/sizing/data/tables

It also writes `SOURCE.yaml` (commit, paths, licence, date) beside the tables.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = "aic-core/src/aiconfigurator_core/systems/data"
GPUS = ("a100_sxm", "h100_sxm", "h200_sxm", "l40s", "b200_sxm", "gb200")
# one recent version per engine; A100's newest tables are older (its newer folders are reuse stubs)
VERSIONS = {"vllm": "0.24.0", "sglang": "0.5.14", "trtllm": "1.3.0rc20"}
A100_VERSIONS = {"vllm": "0.14.0", "sglang": "0.5.10", "trtllm": "1.0.0"}
GEMM_DTYPES = ("bfloat16", "fp8", "nvfp4", "int4_wo")
HEAD_DIMS = (64, 128, 256)
NCCL = {"a100_sxm": "2.27.3", "h100_sxm": "2.29.2", "h200_sxm": "2.29.2", "l40s": "2.27.3", "b200_sxm": "2.29.2",
        "gb200": "2.29.2"}


def _read(git_dir: str, path: str) -> pd.DataFrame | None:
    r = subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], capture_output=True)
    if r.returncode != 0:
        return None
    return pd.read_parquet(io.BytesIO(r.stdout))


def _gemm(d: pd.DataFrame) -> dict[str, np.ndarray]:
    d = d[d.gemm_dtype.isin(GEMM_DTYPES)]
    d = d.groupby(["gemm_dtype", "m", "n", "k"], as_index=False).latency.min()
    dtypes = [t for t in GEMM_DTYPES if t in set(d.gemm_dtype)]
    ms, ns, ks = (np.array(sorted(d[c].unique()), dtype=np.int64) for c in ("m", "n", "k"))
    grid = np.full((len(dtypes), len(ms), len(ns), len(ks)), np.nan, dtype=np.float16)
    di = {t: i for i, t in enumerate(dtypes)}
    mi, ni, ki = ({v: i for i, v in enumerate(a)} for a in (ms, ns, ks))
    for t, m, n, k, lat in d[["gemm_dtype", "m", "n", "k", "latency"]].itertuples(index=False):
        grid[di[t], mi[m], ni[n], ki[k]] = lat
    return {"gemm_dtypes": np.array(dtypes), "gemm_m": ms, "gemm_n": ns, "gemm_k": ks, "gemm_ms": grid}


def _attention(d: pd.DataFrame, prefix: str, length: str) -> dict[str, np.ndarray]:
    if "window_size" in d:
        d = d[d.window_size == 0]
    d = d[(d.attn_dtype == "bfloat16") & (d.beam_width == 1) & d.head_dim.isin(HEAD_DIMS)
          & d.kv_cache_dtype.isin(("bfloat16", "fp8"))]
    d = d.assign(kv_fp8=(d.kv_cache_dtype == "fp8").astype(np.int8), length=d[length])
    d = d.groupby(["batch_size", "length", "num_heads", "num_key_value_heads", "head_dim", "kv_fp8"],
                  as_index=False).latency.min()
    return {f"{prefix}_b": d.batch_size.to_numpy(np.int32), f"{prefix}_s": d.length.to_numpy(np.int32),
            f"{prefix}_nh": d.num_heads.to_numpy(np.int16), f"{prefix}_nkv": d.num_key_value_heads.to_numpy(np.int16),
            f"{prefix}_hd": d.head_dim.to_numpy(np.int16), f"{prefix}_kvfp8": d.kv_fp8.to_numpy(np.int8),
            f"{prefix}_ms": d.latency.to_numpy(np.float16)}


def _allreduce(d: pd.DataFrame, source: str) -> dict[str, np.ndarray]:
    if "backend" in d:  # vLLM / SGLang measure graph and eager modes: served decode runs in CUDA graphs
        d = d[d.backend.str.endswith("graph")]
    d = d.groupby(["num_gpus", "message_size"], as_index=False).latency.min()
    return {"ar_gpus": d.num_gpus.to_numpy(np.int16), "ar_elems": d.message_size.to_numpy(np.int64),
            "ar_ms": d.latency.to_numpy(np.float32), "ar_source": np.array(source)}


def pack(git_dir: str, out: Path) -> dict:
    commit = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    index: dict = {}
    for gpu in GPUS:
        for engine in VERSIONS:
            v = (A100_VERSIONS if gpu == "a100_sxm" else VERSIONS)[engine]
            paths = {"gemm": f"{ROOT}/{gpu}/gemm/{engine}/{v}/gemm_perf.parquet",
                     "context_attention": f"{ROOT}/{gpu}/attention/{engine}/{v}/context_attention_perf.parquet",
                     "generation_attention": f"{ROOT}/{gpu}/attention/{engine}/{v}/generation_attention_perf.parquet",
                     "allreduce": f"{ROOT}/{gpu}/comm/{engine}/{v}/custom_allreduce_perf.parquet"}
            frames = {k: _read(git_dir, p) for k, p in paths.items()}
            if any(frames[k] is None for k in ("gemm", "context_attention", "generation_attention")):
                print(f"skip {gpu} {engine} {v}: a table is missing")
                continue
            arrays = {**_gemm(frames["gemm"]), **_attention(frames["context_attention"], "ctx", "isl"),
                      **_attention(frames["generation_attention"], "gen", "step")}
            if frames["allreduce"] is None:  # e.g. no custom all-reduce table: NCCL's, measured on the same GPU
                paths["allreduce"] = f"{ROOT}/{gpu}/comm/nccl/{NCCL[gpu]}/nccl_perf.parquet"
                nccl = _read(git_dir, paths["allreduce"])
                assert nccl is not None, paths["allreduce"]
                nccl = nccl[(nccl.op_name == "all_reduce") & (nccl.nccl_dtype == "half")]
                arrays.update(_allreduce(nccl, "nccl"))
            else:
                arrays.update(_allreduce(frames["allreduce"], "custom"))
            dest = out / gpu / f"{engine}.npz"
            dest.parent.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(dest, **arrays)
            index.setdefault(gpu, {})[engine] = {"version": v, "file": f"{gpu}/{engine}.npz",
                                                 "from": sorted(set(paths.values()))}
            print(f"{dest}: {dest.stat().st_size / 1024:.0f} KiB")
    return {"source": "ai-dynamo/aiconfigurator (github.com/ai-dynamo/aiconfigurator)", "commit": commit,
            "licence": "Apache-2.0 (the repository's LICENSE; SPDX header in every collection_meta.yaml)",
            "packed_on": dt.date.today().isoformat(), "packed_by": "scripts/pack_gpu_tables.py",
            "what": "latency in ms of operators measured by aiconfigurator on each GPU; subset and re-encoded, "
                    "values unchanged (fastest kernel per point)", "tables": index}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", required=True, help="git directory of an aiconfigurator checkout")
    ap.add_argument("--out", type=Path, default=Path("advisor/sizing/data/tables"))
    a = ap.parse_args()
    meta = pack(a.repo, a.out)
    (a.out / "SOURCE.yaml").write_text(yaml.safe_dump(meta, sort_keys=False, width=120))


if __name__ == "__main__":
    main()
