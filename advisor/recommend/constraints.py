"""What the buyer needs: SLOs, load, budget, allowed hardware, deployment, quality and ops limits.

Built from `--constraints FILE.yaml` and/or CLI flags (a flag wins over the file). SLOs left
unset here come from each run's scenario.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from advisor.catalog import Catalog
from advisor.catalog.cost import DEFAULT_HEADROOM, HOURS_PER_MONTH
from scenarios.types import SLOs, check_percentile
from scenarios.yaml_file import YamlFileError, read_yaml


class ConstraintsError(ValueError):
    """Constraints that cannot be used; the message names the bad value and the fix."""


class Constraints(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario: str | None = None
    ttft_ms: float | None = Field(default=None, gt=0)  # at `percentile`
    tpot_ms: float | None = Field(default=None, gt=0)
    e2e_ms: float | None = Field(default=None, gt=0)
    percentile: Annotated[float, AfterValidator(check_percentile)] = 95.0
    peak_rps: float | None = Field(default=None, gt=0)
    avg_rps: float | None = Field(default=None, gt=0)
    monthly_tokens_m: float | None = Field(default=None, gt=0)  # millions of tokens (input + output) per month
    budget_usd_month: float | None = Field(default=None, gt=0)
    hardware: tuple[str, ...] = ()  # allowed catalog ids; empty = any
    vendors: tuple[str, ...] = ()  # allowed vendors; empty = any
    deployment: Literal["any", "cloud", "on-prem", "edge"] = "any"
    cpu_only: bool = False  # no GPUs at all
    max_quality_drift: float | None = Field(default=None, ge=0, le=1)  # max 1 - top-1 agreement on verify's text
    max_complexity: Literal["low", "medium", "high"] = "high"
    headroom: float = Field(default=DEFAULT_HEADROOM, ge=0, le=10)
    price_tier: Literal["cloud_on_demand", "owned_tco"] | None = None  # default: owned for on-prem/edge
    include_estimates: bool = True
    allow_uncalibrated: bool = False  # let uncalibrated estimates (another device class, one run) carry the headline
    tie_break: tuple[Literal["complexity", "margin"], ...] = ("complexity", "margin")  # order among tied options

    @model_validator(mode="after")
    def _load_order(self) -> Constraints:
        if self.peak_rps is not None and self.avg_rps is not None and self.avg_rps > self.peak_rps:
            raise ValueError(f"avg_rps {self.avg_rps} is above peak_rps {self.peak_rps}")
        return self

    @property
    def tier(self) -> str:
        if self.price_tier:
            return self.price_tier
        return "owned_tco" if self.deployment in ("on-prem", "edge") else "cloud_on_demand"

    def design_rps(self, tokens_per_request: float | None) -> tuple[float | None, str]:
        """The request rate to size replicas for, and where it came from."""
        if self.peak_rps:
            return self.peak_rps, f"peak {self.peak_rps:g} req/s"
        if self.avg_rps:
            return self.avg_rps, f"average {self.avg_rps:g} req/s (no peak given)"
        if self.monthly_tokens_m and tokens_per_request:
            rps = self.monthly_tokens_m * 1e6 / (HOURS_PER_MONTH * 3600.0) / tokens_per_request
            return rps, f"{self.monthly_tokens_m:g}M tokens/month spread evenly ({rps:.3g} req/s, no peak given)"
        return None, "no load given: one replica"

    def slos_for(self, run_slos: SLOs) -> dict[str, float | None]:
        """Effective limits: these constraints' where set, else the run's scenario SLOs."""
        return {k: getattr(self, k) if getattr(self, k) is not None else getattr(run_slos, k)
                for k in ("ttft_ms", "tpot_ms", "e2e_ms")}

    def check_vendors(self, catalog: Catalog) -> None:
        """Refuse an allowed vendor that no catalog hardware has: it would rule out every option without a word."""
        valid = sorted({h.vendor for h in catalog.hardware.values()})
        unknown = [v for v in self.vendors if v not in valid]
        if unknown:
            raise ConstraintsError(f"unknown vendor {', '.join(map(repr, unknown))}; the catalog's vendors are "
                                   f"{', '.join(valid)} (see `advisor hardware`)")

    def merged(self, **flags: Any) -> Constraints:
        """A copy with every flag that is not None (or not empty) applied on top."""
        upd = {k: (tuple(v) if isinstance(v, list | tuple) else v) for k, v in flags.items()
               if v is not None and v != () and v != []}
        return build({**self.model_dump(), **upd}, "flags")

    @classmethod
    def from_yaml(cls, path: Path) -> Constraints:
        path = Path(path)
        if path.is_dir():
            raise ConstraintsError(f"constraints file {path} is a folder; pass a YAML file to --constraints")
        if not path.is_file():
            raise ConstraintsError(f"constraints file {path} not found; pass an existing YAML file to --constraints")
        try:
            d = read_yaml(path) or {}  # UTF-8, duplicate keys refused, the file named in every error
        except YamlFileError as e:
            raise ConstraintsError(str(e)) from None
        if not isinstance(d, dict):
            raise ConstraintsError(f"{path}: expected a mapping of constraint names to values")
        return build(d, str(path))


def build(d: dict[str, Any], where: str) -> Constraints:
    try:
        return Constraints(**d)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "constraints"
        raise ConstraintsError(f"{where}: {loc}: {err['msg']} (got {err.get('input')!r})") from None
