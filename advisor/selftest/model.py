"""What `advisor selftest` is asked (SelftestConfig) and what each of its checks found (Check)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

Status = Literal["pass", "fail", "warn", "n/a"]
Device = Literal["cpu", "cuda"]


@dataclass(frozen=True)
class SelftestConfig:
    device: Device
    out_dir: Path
    quick: bool = False  # smaller, shorter runs (the tests use it); the default is the full selftest
    step_model: str = ""  # the bare-step model; "" picks: llama-1b on CUDA, small-100m on CPU (tiny with quick)

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be cpu or cuda, got {self.device!r}")
        if not self.step_model:
            pick = "llama-1b" if self.device == "cuda" else ("tiny" if self.quick else "small-100m")
            object.__setattr__(self, "step_model", pick)

    @property
    def served_model(self) -> str:
        """The model of the served runs: small enough for a short run on this device."""
        return "small-100m" if self.device == "cuda" else "tiny"


@dataclass(frozen=True)
class Check:
    name: str  # "nvml", "greedy:tiny", "step", "served", "batching"
    title: str
    status: Status
    summary: str  # what was found, in words (for a failure: what is wrong and what it means)
    figures: dict[str, Any] = field(default_factory=dict)
    seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:  # hand-written: a shape no field states (figures: any values)
        return asdict(self)
