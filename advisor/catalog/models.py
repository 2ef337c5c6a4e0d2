"""Typed entries of the hardware, hosted-API and engine catalogs (pydantic, validated on load).

Each figure carries where it came from: spec figures share their entry's `spec_source`
and `spec_as_of`, every price has its own `source` and `as_of`. Nothing here reads files;
see `advisor.catalog.loader`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Tier = Literal["cloud_on_demand", "owned_tco", "user"]
Deployment = Literal["cloud", "on-prem", "edge"]
Complexity = Literal["low", "medium", "high"]
COMPLEXITY_ORDER: dict[str, int] = {"low": 0, "medium": 1, "high": 2}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OwnedCostAssumptions(_Frozen):
    amortization_years: float = Field(gt=0)
    power_usd_per_kwh: float = Field(ge=0)
    pue: float = Field(ge=1)
    overhead_fraction: float = Field(ge=0)
    source: str
    as_of: str


class Price(_Frozen):
    tier: Tier
    provider: str | None = None
    usd_per_hour: float | None = Field(default=None, gt=0)  # per device-hour; computed for owned_tco
    capex_usd: float | None = Field(default=None, gt=0)  # owned_tco: purchase price per device
    source: str
    as_of: str
    assumptions: str | None = None

    @model_validator(mode="after")
    def _has_a_price(self) -> Price:
        if self.usd_per_hour is None and self.capex_usd is None:
            raise ValueError(f"price ({self.tier}, {self.source!r}) needs usd_per_hour or capex_usd")
        return self


def owned_usd_per_hour(capex_usd: float, tdp_w: float | None, a: OwnedCostAssumptions) -> float:
    """Amortized capex + overhead + power at TDP (x PUE), per device-hour."""
    hours = a.amortization_years * 8760.0
    power = (tdp_w or 0.0) / 1000.0 * a.pue * a.power_usd_per_kwh
    return capex_usd / hours * (1.0 + a.overhead_fraction) + power


GPU_STACKS: dict[str, str] = {"nvidia": "cuda", "amd": "rocm", "intel": "intel-gpu"}
ARM_CPU_VENDORS = ("arm", "aws-graviton", "ampere", "apple")


class Hardware(_Frozen):
    id: str
    name: str
    kind: Literal["gpu", "cpu"]
    vendor: str
    deployments: tuple[Deployment, ...]
    match: tuple[str, ...] = ()  # substrings of the device name (pynvml / cpu model) that map to this entry
    match_unless: tuple[str, ...] = ()  # words that keep a matching name off this entry ("NVL": another card)
    max_cores: int | None = None  # cpu: a detected machine with at most this many cores may map here
    memory_gb: float = Field(gt=0)
    memory_bw_gbps: float | None = Field(default=None, gt=0)  # None only for an unlisted GPU: no peaks known
    bf16_tflops_dense: float | None = Field(default=None, gt=0)
    bf16_tflops_sparse: float | None = Field(default=None, gt=0)
    fp8_tflops_dense: float | None = Field(default=None, gt=0)
    fp8_tflops_sparse: float | None = Field(default=None, gt=0)
    fp32_tflops_dense: float | None = Field(default=None, gt=0)  # non-tensor FP32 (what fp32 weights get by default)
    tdp_w: float | None = Field(default=None, gt=0)
    spec_source: str
    spec_as_of: str
    spec_notes: str | None = None
    prices: tuple[Price, ...] = ()
    measured: bool = False  # True for the detected "custom" machine: bandwidth measured here
    unlisted: bool = False  # a GPU the catalog lacks (name and memory from NVML): no peaks, no price, nothing estimated

    @property
    def stack(self) -> str:
        """The software stack an engine needs here: cuda, rocm, intel-gpu, cpu-x86 or cpu-arm (compatibility key)."""
        if self.kind == "cpu":
            return "cpu-arm" if self.vendor in ARM_CPU_VENDORS else "cpu-x86"
        return GPU_STACKS.get(self.vendor, f"{self.vendor}-gpu")

    def peak_tflops(self, dtype_bytes: float) -> float | None:
        """Dense peak for the weights' precision: FP8 for 1-byte weights when the part has it, FP32 for 4-byte, else BF16.

        None where the part has no bandwidth figure (an unlisted GPU): a roofline needs both peaks."""
        if self.memory_bw_gbps is None:
            return None
        if dtype_bytes <= 1 and self.fp8_tflops_dense:
            return self.fp8_tflops_dense
        if dtype_bytes >= 4:
            return self.fp32_tflops_dense
        return self.bf16_tflops_dense


class HostedOffer(_Frozen):
    provider: str
    model: str
    model_class: str
    input_usd_per_1m: float = Field(ge=0)
    output_usd_per_1m: float = Field(ge=0)
    source: str
    as_of: str

    def blended_usd_per_1m(self, input_per_output: float = 3.0) -> float:
        """Price of 1M tokens at `input_per_output` input tokens per output token (3:1 by convention)."""
        w = input_per_output
        return (w * self.input_usd_per_1m + self.output_usd_per_1m) / (w + 1.0)


Stack = Literal["cuda", "rocm", "intel-gpu", "cpu-x86", "cpu-arm"]


class StackClaim(_Frozen):
    """The engine runs on `stack`, says `source` (as of `as_of`); `advisor_ran`: where advisor itself ran it, or None."""

    stack: Stack
    source: str
    as_of: str
    advisor_ran: str | None = None


class EngineOps(_Frozen):
    complexity: Complexity
    hardware: tuple[Literal["cpu", "gpu"], ...]
    reason: str
    runs_on: tuple[StackClaim, ...] = ()
    served: bool = False  # an endpoint client (or the test engine): nothing is extrapolated to other hardware

    def claim(self, stack: str) -> StackClaim | None:
        """The sourced claim that the engine runs on `stack` (None: no such claim, so no row there)."""
        return next((c for c in self.runs_on if c.stack == stack), None)
