"""What each engine keeps back from a GPU's memory before its KV cache: the memory fraction and the reserve.

A GPU of M bytes holding W bytes of weights gets a KV cache of `kv_share x (usable - W)`, where `usable` is what
the engine lets weights and KV cache share (M less its reserve) and `kv_share` the fraction of the rest it
takes. Figures, each with its source (estimates say so):

- vllm: `gpu_memory_utilization` 0.9 of the whole GPU holds weights, the profiled activation peak, CUDA graphs and
  non-torch memory; the KV cache gets the rest (vLLM docs, engine args). The profiling run uses
  `max_num_batched_tokens` 8192 and `max_num_seqs` 1024 on GPUs of 70 GiB or more, 2048 and 256 below (vLLM V1's
  online-serving defaults, `EngineArgs._set_default_args`, as recalled: not re-read here). CUDA graph memory is
  counted inside the 0.9 (vLLM >= 0.19 profiles it, `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`; inferred from
  public launch scripts that turn it off, not read in vLLM's code).
- sglang: `mem_fraction_static` = (M - reserved) / M of weights + KV pool, where reserved (MiB) = 512 +
  1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + 1024 x tp / 8, at least 10 GiB on GPUs over
  60 GiB; chunked_prefill_size and cuda_graph_max_bs by GPU memory and TP (sglang
  python/sglang/srt/server_args.py, `_handle_gpu_memory_settings`, read 2026-11-28; no DP attention, no
  speculative decoding, no piecewise CUDA graphs).
- trtllm: `kv_cache_config.free_gpu_memory_fraction` 0.9 of the memory free after weights and the profiling
  run's activations at `max_num_tokens` 8192 (TensorRT-LLM LLM API defaults); CUDA graphs are captured
  afterwards, in the remaining 10% (an estimate).
- own: 0.8 of the memory free after the weights (own_engine/core/runner_defaults.py, `kv_cache_blocks`,
  `DEFAULT_KV_FRACTION_CUDA`); activations for its 2048-token budget and CUDA graphs live in the other 20%.

Estimates shared by all (unmeasured): the CUDA context and cuBLAS workspaces 0.5 GiB per GPU; under TP the
communication buffers (NCCL, custom all-reduce) 1 GiB x tp / 8, SGLang's own allowance for parallelism; CUDA
graphs 2 MiB per captured batch size, SGLang's coefficient; activations: one layer's live bf16 tensors for the
batched tokens (hidden x 4, q + k + v + attention output, gate + up + act) plus fp32 logits of the sampled rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from advisor.sizing.architecture import Architecture
from advisor.sizing.errors import SizingError

# The sizing profiles: keys of data/engines.yaml (each names its catalog engine there), not adapter names.
Engine = Literal["vllm", "sglang", "trtllm", "own"]
OWN_PROFILE: Engine = "own"  # own_engine's profile: one GPU, its host time measured (not fitted)
GIB = 2**30
MIB = 2**20
CONTEXT_BYTES = 0.5 * GIB  # CUDA context + cuBLAS workspace per GPU (estimate)
GRAPH_BYTES_PER_BATCH = 2 * MIB  # SGLang's coefficient for CUDA graph memory per captured batch size
VLLM_MEMORY_UTILIZATION = 0.9  # vLLM --gpu-memory-utilization default
TRTLLM_FREE_FRACTION = 0.9  # TensorRT-LLM KvCacheConfig.free_gpu_memory_fraction default
OWN_KV_FRACTION = 0.8  # own_engine DEFAULT_KV_FRACTION_CUDA (tests check it against own_engine's source)


@dataclass(frozen=True)
class Budget:
    """One engine on one GPU: bytes weights and KV cache may share, and the share of the rest the KV cache takes."""

    usable_bytes: float
    kv_share: float
    notes: tuple[str, ...]


def check_engine(engine: str) -> Engine:
    if engine not in get_args(Engine):
        raise SizingError(f"unknown engine {engine!r}: choose one of {', '.join(get_args(Engine))}")
    return engine  # type: ignore[return-value]  # checked against the Literal just above


def activation_bytes(arch: Architecture, tp: int, tokens: int, sampled_rows: int) -> float:
    """One layer's live bf16 tensors for `tokens` batched tokens under TP, plus fp32 logits (an estimate)."""
    per_token = 4 * arch.hidden_size + (2 * arch.q_size + 2 * arch.kv_size + 3 * arch.intermediate_size) / tp
    return 2.0 * tokens * per_token + 4.0 * sampled_rows * arch.vocab_size / tp


def comm_bytes(tp: int) -> float:
    return 0.0 if tp == 1 else GIB * tp / 8


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def _vllm(arch: Architecture, memory: float, tp: int) -> Budget:
    large = memory >= 70 * GIB
    tokens, seqs = (8192, 1024) if large else (2048, 256)
    graphs = GRAPH_BYTES_PER_BATCH * min(2 * seqs, 512)
    act = activation_bytes(arch, tp, tokens, seqs)
    usable = VLLM_MEMORY_UTILIZATION * memory - act - graphs - CONTEXT_BYTES - comm_bytes(tp)
    return Budget(usable, 1.0, (
        f"vllm: gpu_memory_utilization {VLLM_MEMORY_UTILIZATION:g} (vLLM default) of the GPU holds weights, "
        "activations, CUDA graphs and the KV cache; the rest is left out",
        f"activations {_gb(act)} for max_num_batched_tokens {tokens} and max_num_seqs {seqs} (vLLM V1 online "
        f"defaults for a GPU {'of' if large else 'under'} 70 GiB; estimate)",
        f"CUDA graphs {_gb(graphs)} for capture sizes up to {min(2 * seqs, 512)} (2 MiB each, SGLang's coefficient; "
        "estimate)", *_shared(tp)))


def _sglang_settings(memory_mib: float, tp: int) -> tuple[int, int]:
    """chunked_prefill_size and cuda_graph_max_bs by GPU memory and TP (SGLang server_args.py)."""
    if memory_mib < 20 * 1024:
        return 2048, 8
    if memory_mib < 35 * 1024:
        return 2048, 24 if tp < 4 else 80
    if memory_mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if memory_mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def _sglang(memory: float, tp: int) -> Budget:
    memory_mib = memory / MIB
    chunk, graph_bs = _sglang_settings(memory_mib, tp)
    reserved_mib = 512 + 1.5 * max(chunk, 2048) + 2 * graph_bs + 1024 * tp / 8
    if memory_mib > 60 * 1024:
        reserved_mib = max(reserved_mib, 10 * 1024)
    fraction = round((memory_mib - reserved_mib) / memory_mib, 3)
    return Budget(fraction * memory, 1.0, (
        f"sglang: mem_fraction_static {fraction:g} of the GPU for weights and KV pool (SGLang's default: "
        f"{reserved_mib:.0f} MiB reserved for chunked_prefill_size {chunk}, cuda_graph_max_bs {graph_bs}, TP {tp}; "
        "server_args.py _handle_gpu_memory_settings)",))


def _trtllm(arch: Architecture, memory: float, tp: int) -> Budget:
    act = activation_bytes(arch, tp, 8192, 2048)
    return Budget(memory - act - CONTEXT_BYTES - comm_bytes(tp), TRTLLM_FREE_FRACTION, (
        f"trtllm: kv_cache_config.free_gpu_memory_fraction {TRTLLM_FREE_FRACTION:g} (TensorRT-LLM default) of the "
        "memory free after weights and activations",
        f"activations {_gb(act)} for max_num_tokens 8192 (TensorRT-LLM default; estimate); CUDA graphs in the "
        "remaining 10% (estimate)", *_shared(tp)))


def _own(memory: float, tp: int) -> Budget:
    return Budget(memory - CONTEXT_BYTES - comm_bytes(tp), OWN_KV_FRACTION, (
        f"own: {OWN_KV_FRACTION:g} of the memory free after the weights (own_engine DEFAULT_KV_FRACTION_CUDA, "
        "runner_defaults.kv_cache_blocks); "
        "activations for its 2048-token budget and CUDA graphs in the other 20%", *_shared(tp)))


def _shared(tp: int) -> tuple[str, ...]:
    notes: tuple[str, ...] = (f"CUDA context and cuBLAS workspace {_gb(CONTEXT_BYTES)} per GPU (estimate)",)
    if tp > 1:
        notes += (f"communication buffers {_gb(comm_bytes(tp))} per GPU at TP {tp} (1 GiB x tp / 8, SGLang's "
                  "allowance for parallelism; estimate)",)
    return notes


def engine_budget(arch: Architecture, memory_bytes: float, tp: int, engine: str) -> Budget:
    """What `engine` lets weights and KV cache share on one GPU of `memory_bytes` at TP `tp`."""
    name = check_engine(engine)
    if name == "vllm":
        return _vllm(arch, memory_bytes, tp)
    if name == "sglang":
        return _sglang(memory_bytes, tp)
    if name == "trtllm":
        return _trtllm(arch, memory_bytes, tp)
    return _own(memory_bytes, tp)
