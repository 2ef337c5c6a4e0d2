"""Typed entries of the hardware, hosted-API and engine catalogs (pydantic, validated on load).

Each figure carries where it came from: spec figures share their entry's `spec_source`, `spec_url`
and `spec_as_of`; a catalog price is a list of `Quote`s, each a provider's listed price with its
URL and the date its source states, from which `advisor.catalog.pricing` computes the tier's
price by the policy stated in hardware.yaml. Nothing here reads files; see `advisor.catalog.loader`.
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


class Quote(_Frozen):
    """One price as its source lists it: a rental per device-hour or per node-hour, or a purchase price.

    `as_of` is the date the source states (None: it states none), never the day the entry was typed.
    `from_memory` marks a figure with no citable source: it then has no URL, and recommend never
    headlines it. A node price (providers that rent only whole nodes) gives the per-device price
    derived as node price / devices per node, and says so."""

    provider: str
    url: str | None = None
    as_of: str | None = None
    listed: str  # the price as the source writes it, quoted
    usd_per_hour: float | None = Field(default=None, gt=0)  # per device (one GPU, or one CPU instance)
    usd_per_node_hour: float | None = Field(default=None, gt=0)
    capex_usd: float | None = Field(default=None, gt=0)  # purchase price per device
    capex_usd_per_node: float | None = Field(default=None, gt=0)
    devices_per_node: int | None = Field(default=None, ge=2)
    from_memory: bool = False
    note: str | None = None

    @model_validator(mode="after")
    def _one_figure_and_a_source(self) -> Quote:
        given = [f for f in ("usd_per_hour", "usd_per_node_hour", "capex_usd", "capex_usd_per_node")
                 if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError(f"quote from {self.provider!r} needs exactly one of usd_per_hour, usd_per_node_hour, "
                             f"capex_usd, capex_usd_per_node (got {given or 'none'})")
        if given[0].endswith("per_node") or given[0].endswith("node_hour"):
            if self.devices_per_node is None:
                raise ValueError(f"quote from {self.provider!r} is per node: give devices_per_node")
        if not self.from_memory and not self.url:
            raise ValueError(f"quote from {self.provider!r} has no url: give the page it is listed on, "
                             "or mark it from_memory: true")
        return self

    @property
    def is_rental(self) -> bool:
        return self.usd_per_hour is not None or self.usd_per_node_hour is not None

    @property
    def per_device(self) -> float:
        """USD per device-hour (rental) or USD per device (purchase); a node figure divided by its devices."""
        v = self.usd_per_hour or self.capex_usd
        if v is not None:
            return v
        node = self.usd_per_node_hour or self.capex_usd_per_node
        assert node is not None and self.devices_per_node
        return node / self.devices_per_node

    @property
    def derived(self) -> bool:
        """True when the per-device figure is derived from a node price."""
        return self.devices_per_node is not None


class Price(_Frozen):
    """A tier's price: `quotes` in the packaged catalog (the tier price is computed from them), or a user's
    own `usd_per_hour` (an override, or hardware added in a --prices file)."""

    tier: Tier
    provider: str | None = None
    usd_per_hour: float | None = Field(default=None, gt=0)  # a user's own per device-hour price
    capex_usd: float | None = Field(default=None, gt=0)  # owned_tco given directly (a --prices file)
    quotes: tuple[Quote, ...] = ()
    source: str = ""
    as_of: str = ""
    assumptions: str | None = None

    @model_validator(mode="after")
    def _has_a_price(self) -> Price:
        if self.usd_per_hour is None and self.capex_usd is None and not self.quotes:
            raise ValueError(f"price ({self.tier}) needs quotes, usd_per_hour or capex_usd")
        if self.quotes and self.tier == "cloud_on_demand" and not all(q.is_rental for q in self.quotes):
            raise ValueError("a cloud_on_demand price's quotes are rentals (usd_per_hour or usd_per_node_hour)")
        if self.quotes and self.tier == "owned_tco" and any(q.is_rental for q in self.quotes):
            raise ValueError("an owned_tco price's quotes are purchases (capex_usd or capex_usd_per_node)")
        if not self.quotes and not self.source:
            raise ValueError(f"price ({self.tier}) needs a source")
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
    tdp_w: float | None = Field(default=None, gt=0)  # a CPU instance: its share of the host's power
    interconnect: str | None = None  # device-to-device link as the datasheet names it (NVLink 4 900 GB/s, PCIe Gen5)
    spec_source: str
    spec_url: str | None = None  # the page the spec figures were read from (None: from memory, see spec_notes)
    spec_as_of: str
    spec_notes: str | None = None
    spec_from_memory: bool = False  # True: no page read for these figures; spec_notes says which are estimates
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
