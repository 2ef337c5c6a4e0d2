"""Weight and KV-cache precisions: bytes per parameter and per KV element, and the operator-table dtypes.

Only the linear projections (q, k, v, o, gate, up, down) are quantized: embeddings, lm_head, norms and biases
stay bf16 in fp8, fp4 and int4 checkpoints, as NVIDIA ModelOpt exports and AutoAWQ/GPTQ ship them
(`weight_bytes` is the one place that rule lives).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from advisor.sizing.architecture import Architecture
from advisor.sizing.errors import SizingError

PrecisionName = Literal["bf16", "fp8", "fp4", "int4"]
UNQUANTIZED_BYTES = 2.0  # bf16: embeddings, lm_head, norms, biases


@dataclass(frozen=True)
class Precision:
    name: PrecisionName
    weight_bytes: float  # bytes per weight parameter, including block scales
    kv_bytes: float  # KV cache bytes per element
    gemm_dtype: str  # operator-table GEMM dtype
    kv_dtype: str  # operator-table attention kv_cache_dtype


PRECISIONS: dict[str, Precision] = {
    "bf16": Precision("bf16", 2.0, 2.0, "bfloat16", "bfloat16"),
    # FP8 e4m3 with per-tensor (or per-channel) scales: the scales are negligible
    "fp8": Precision("fp8", 1.0, 1.0, "fp8", "fp8"),
    # NVFP4: 4-bit values + one fp8 (e4m3) scale per 16 values = 0.5 + 1/16 (the fp32 global scale per tensor is
    # negligible); KV cache in fp8, as ModelOpt's NVFP4 checkpoints ship it (kv_cache_quant_algo FP8)
    "fp4": Precision("fp4", 0.5625, 1.0, "nvfp4", "fp8"),
    # AWQ / GPTQ, group 128: 4-bit values + an fp16 scale (2 bytes) and a 4-bit packed zero (0.5 byte) per 128
    # values = 0.5 + 2.5/128 = 0.5195 (counting the zero at 16 bits gives 0.531); weight-only, so KV stays bf16
    "int4": Precision("int4", 0.5 + 2.5 / 128, 2.0, "int4_wo", "bfloat16"),
}


def precision(name: str) -> Precision:
    """The named precision (any case); an unknown one is a SizingError listing the four."""
    found = PRECISIONS.get(name.strip().lower())
    if found is None:
        raise SizingError(f"unknown precision {name!r}: choose one of {', '.join(get_args(PrecisionName))}")
    return found


def weight_bytes(arch: Architecture, prec: Precision) -> float:
    """The whole model's weight bytes: projections at the precision's bytes, everything else at bf16."""
    linear = arch.n_layers * arch.linear_params_per_layer
    return linear * prec.weight_bytes + (arch.n_params - linear) * UNQUANTIZED_BYTES
