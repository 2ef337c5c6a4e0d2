"""Does a model fit a GPU at a TP degree under an engine, and how many sequences of a length its KV cache holds.

Weights per GPU under TP: the projections and the (vocabulary-parallel) embeddings and lm_head split TP ways;
K and V projections are replicated when TP exceeds the KV heads; norms and biases sit whole on every GPU. The
engine's reserve and memory fraction come from `reserve.py` (each figure sourced there). Memory is in GB of
10^9 bytes, as the hardware catalog writes it (an "80 GB" H100 has 79.6 GiB = 85.5e9 bytes: sizing by the
catalog's figure is about 7% conservative). Pipeline parallelism and KV offload are not sized.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.sizing.architecture import Architecture
from advisor.sizing.precision import PRECISIONS, UNQUANTIZED_BYTES, Precision, weight_bytes
from advisor.sizing.reserve import OWN_PROFILE, check_engine, engine_budget

TP_DEGREES = (1, 2, 4, 8)
BLOCK_TOKENS = 16  # vLLM's and own_engine's default KV block; SGLang pages by 1 token and TensorRT-LLM by 32 (as recalled): 16 for all
# the catalog's memory_gb is the marketed figure, which is GiB of HBM (nvidia-smi: an H100 "80GB" has 81,559 MiB;
# aiconfigurator's h100_sxm.yaml: 85,899,345,920 bytes); every GB this module reports is 10^9 bytes
BYTES_PER_GB = 2**30
_ROUNDING = 1e-9  # of a sequence: float sums of GB must not turn exactly N sequences into N - 1


@dataclass(frozen=True)
class MemoryFit:
    tp: int
    fits: bool
    memory_gb_per_gpu: float
    weights_gb_per_gpu: float
    reserve_gb_per_gpu: float
    kv_gb_per_gpu: float  # KV room left (>= 0)
    kv_bytes_per_token_per_gpu: float  # 2 x layers x (KV heads on this GPU, replicated ones count) x head_dim x bytes
    tokens_per_sequence: int  # isl + osl, rounded up to the KV block (16 tokens)
    max_sequences: int  # sequences of that length the KV cache holds at once (0 when it does not fit)
    why: str | None  # one line when it does not fit: what, by how much, and what would
    notes: tuple[str, ...]  # the reserve's parts and the memory fraction, in words, with sources


def tp_degrees(arch: Architecture) -> tuple[int, ...]:
    """TP degrees that split the attention heads evenly (KV heads split or replicated whole)."""
    return tuple(tp for tp in TP_DEGREES
                 if arch.n_heads % tp == 0 and (arch.n_kv_heads % tp == 0 or tp % arch.n_kv_heads == 0))


def kv_heads_per_gpu(arch: Architecture, tp: int) -> int:
    return -(-arch.n_kv_heads // tp)  # replicated heads count: 8 KV heads at TP 16 leave one on every GPU


def weights_bytes_per_gpu(arch: Architecture, prec: Precision, tp: int) -> float:
    """One GPU's share of the weights at TP `tp` (see the module docstring for what splits)."""
    h, layers = arch.hidden_size, arch.n_layers
    split = layers * (2 * h * arch.q_size + 3 * h * arch.intermediate_size) / tp
    kv_proj = layers * 2 * h * arch.head_dim * kv_heads_per_gpu(arch, tp)
    linear_total = layers * arch.linear_params_per_layer
    whole = arch.n_params - linear_total - arch.embedding_params  # norms, biases: on every GPU
    return ((split + kv_proj) * prec.weight_bytes
            + (arch.embedding_params / tp + whole) * UNQUANTIZED_BYTES)


def kv_bytes_per_token(arch: Architecture, prec: Precision, tp: int) -> float:
    return 2.0 * arch.n_layers * kv_heads_per_gpu(arch, tp) * arch.head_dim * prec.kv_bytes


def _gb(n: float) -> str:
    return f"{n / 1e9:.0f} GB" if n >= 10e9 else f"{n / 1e9:.2g} GB"


def _remedy(arch: Architecture, prec: Precision, memory_gb: float, tp: int, isl: int, osl: int, engine: str,
            *, kv: bool) -> str:
    """What would fit instead: a higher TP, a smaller precision (fewer weight or KV bytes), else a larger GPU."""
    def fits(p: Precision, t: int) -> bool:  # without a remedy of its own: int4 has fewer weight bytes than fp8
        return memory_fit(arch, p, memory_gb, t, isl, osl, engine, explain=False).fits  # but more KV bytes

    ways = [f"TP {t}" for t in tp_degrees(arch) if t > tp and engine != OWN_PROFILE and fits(prec, t)][:1]
    smaller = [p.name for p in PRECISIONS.values()
               if (p.kv_bytes < prec.kv_bytes if kv else p.weight_bytes < prec.weight_bytes) and fits(p, tp)]
    ways += [" or ".join(smaller[:2])] if smaller else []
    if kv:
        ways.append("shorter sequences")
    return f"use {', or '.join(ways)}, or a larger GPU" if ways else "use a larger GPU"


def memory_fit(arch: Architecture, prec: Precision, memory_gb: float, tp: int, isl: int, osl: int,
               engine: str, explain: bool = True) -> MemoryFit:
    """The fit of `arch` at `prec` on GPUs of `memory_gb` at TP `tp` for sequences of isl + osl tokens
    (`explain`: a `why` that names what would fit instead)."""
    check_engine(engine)
    if tp not in TP_DEGREES or memory_gb <= 0 or isl < 0 or osl < 0 or isl + osl < 1:
        raise ValueError(f"tp {tp} (one of {TP_DEGREES}), memory_gb {memory_gb} (> 0), isl {isl} and osl {osl} "
                         "(>= 0, at least one token)")
    memory = memory_gb * BYTES_PER_GB
    budget = engine_budget(arch, memory, tp, engine)
    weights = weights_bytes_per_gpu(arch, prec, tp)
    kv_room = max(0.0, budget.kv_share * (budget.usable_bytes - weights))
    per_token = kv_bytes_per_token(arch, prec, tp)
    tokens = -(-(isl + osl) // BLOCK_TOKENS) * BLOCK_TOKENS
    per_sequence = tokens * per_token
    sequences = math.floor(kv_room / per_sequence + _ROUNDING)
    reserve = memory - weights - kv_room if weights < budget.usable_bytes else memory - budget.usable_bytes
    why = None
    label = f"{arch.name} in {prec.name}"
    if engine == OWN_PROFILE and tp > 1:
        why, sequences = (f"own_engine runs on one GPU (no tensor parallelism); use vllm, sglang or trtllm for "
                          f"TP {tp}"), 0
    elif weights >= budget.usable_bytes:
        total = weight_bytes(arch, prec)
        why = (f"{label} needs {_gb(total)} of weights ({_gb(weights)} per GPU at TP {tp}); {tp} x {memory_gb:g} GB "
               f"hold {_gb(tp * max(budget.usable_bytes, 0.0))} usable for weights and KV cache under {engine}: "
               f"{_remedy(arch, prec, memory_gb, tp, isl, osl, engine, kv=False) if explain else 'does not fit'}")
    elif sequences < 1:
        why = (f"{label} at TP {tp} leaves {_gb(kv_room)} of KV cache per GPU under {engine}; one sequence of "
               f"{tokens} tokens needs {_gb(per_sequence)}: "
               f"{_remedy(arch, prec, memory_gb, tp, isl, osl, engine, kv=True) if explain else 'does not fit'}")
    return MemoryFit(
        tp=tp, fits=why is None, memory_gb_per_gpu=memory_gb, weights_gb_per_gpu=weights / 1e9,
        reserve_gb_per_gpu=max(0.0, reserve) / 1e9, kv_gb_per_gpu=kv_room / 1e9,
        kv_bytes_per_token_per_gpu=per_token, tokens_per_sequence=tokens,
        max_sequences=sequences if why is None else 0, why=why, notes=budget.notes)


def fits_anywhere(arch: Architecture, prec: Precision, memory_gb: float, isl: int, osl: int,
                  engine: str) -> tuple[MemoryFit, ...]:
    """The fit at each legal TP degree of `arch`, lowest first."""
    return tuple(memory_fit(arch, prec, memory_gb, tp, isl, osl, engine) for tp in tp_degrees(arch))
