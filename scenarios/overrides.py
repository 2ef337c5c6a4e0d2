"""What the user changed from the command line, validated, and recorded in the result.

`--rate`, `--duration`, `--warmup`, `--concurrency`, `--max-requests`,
`--seed`, `--length-scale`, `--max-input-tokens`, `--max-output-tokens`,
`--full-scale`. Each field is None when not given; `as_dict()` keeps only
what was given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

FLAGS = {"rate_rps": "--rate", "duration_s": "--duration", "warmup_s": "--warmup", "concurrency": "--concurrency",
          "max_requests": "--max-requests", "seed": "--seed", "length_scale": "--length-scale",
          "max_input_tokens": "--max-input-tokens", "max_output_tokens": "--max-output-tokens"}


def flag(name: str) -> str:
    """The CLI flag of an override field (for error messages)."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


MAX_TOKENS = 10_000_000  # a length cap past this is a typo
# Valid ranges (docs/metrics.md, "The measurement window"). A rate over a window shorter than MIN_WINDOW_S
# means nothing (a few requests, a clock tick, one request's own latency); past the maxima a number is a
# typo, and a finite 1e308 would overflow the schedule's arithmetic like inf.
MIN_WINDOW_S = 0.1
MAX_SECONDS = 1e7  # about 116 days
MAX_RATE_RPS = 1e6  # a schedule holds at most 1,000,000 requests anyway
MAX_LENGTH_SCALE = 1e4
RANGES: dict[str, tuple[float, float, str]] = {  # name -> (smallest, largest, unit)
    "rate_rps": (0.0, MAX_RATE_RPS, "req/s"), "duration_s": (MIN_WINDOW_S, MAX_SECONDS, "seconds"),
    "length_scale": (0.0, MAX_LENGTH_SCALE, ""), "warmup_s": (0.0, MAX_SECONDS, "seconds")}


@dataclass(frozen=True)
class Knobs:
    """The settings a scenario's `fit` block and the command line both set, validated once, here.

    `Overrides` (the command line) and `scenarios.spec.Fit` (the YAML block) extend it; an error names
    the flag for the one and the field for the other.
    """

    # `help`: the field's meaning, the --help text of its flag (advisor_cli.options.scenario_flags)
    rate_rps: float | None = field(default=None, metadata={  # mean request rate; scales the arrival process
        "help": "Request rate (req/s) instead of the scenario's."})
    duration_s: float | None = field(default=None, metadata={"help": "Measurement window in seconds."})
    warmup_s: float | None = field(default=None, metadata={
        "help": "Warm-up seconds before the window (excluded; 0 for none)."})
    concurrency: int | None = field(default=None, metadata={"help": "Closed-loop users (closed-loop scenarios)."})
    max_requests: int | None = field(default=None, metadata={  # requests in the schedule (warm-up included)
        "help": "Cap the number of requests."})
    length_scale: float | None = field(default=None, metadata={"help": "Multiply input and output token lengths."})
    max_input_tokens: int | None = field(default=None, metadata={"help": "Cap prompt lengths."})
    max_output_tokens: int | None = field(default=None, metadata={"help": "Cap output lengths."})

    def _name(self, field: str) -> str:
        return field

    def __post_init__(self) -> None:
        positive = ("rate_rps", "duration_s", "length_scale")
        at_least_one = ("concurrency", "max_requests", "max_input_tokens", "max_output_tokens")
        for name in positive:
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
                                  or v <= 0):
                raise ValueError(f"{self._name(name)} must be a finite number > 0, got {v!r}")
            in_range(self._name(name), name, v)
        for name in at_least_one:
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{self._name(name)} must be an integer >= 1, got {v!r}")
            if name.endswith("_tokens") and v is not None and v > MAX_TOKENS:
                raise ValueError(f"{self._name(name)} must be at most {MAX_TOKENS:,}, got {v!r}")
        w = self.warmup_s
        if w is not None and (isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) or w < 0):
            raise ValueError(f"{self._name('warmup_s')} must be a finite number >= 0 seconds, got {w!r}")
        in_range(self._name("warmup_s"), "warmup_s", w)


def in_range(label: str, name: str, v: float | None) -> None:
    """The one-line refusal of a finite number outside its valid range (1e308 is refused like inf)."""
    if v is None:
        return
    lo, hi, unit = RANGES[name]
    if v > hi or (name == "duration_s" and v < lo):
        span = f"{lo:g} to {hi:g}" if lo > 0 else f"at most {hi:g}"
        why = " (a rate over a shorter window means nothing)" if name == "duration_s" and v < lo else ""
        raise ValueError(f"{label} must be {span}{' ' + unit if unit else ''}{why}, got {v!r}")


@dataclass(frozen=True)
class Overrides(Knobs):
    seed: int | None = field(default=None, metadata={  # wins over build_schedule's seed argument
        "help": "Schedule seed (same seed, same requests)."})
    full_scale: bool = field(default=False, metadata={  # ignore the scenario's `fit` block
        "help": "Use the scenario's real traffic shape, not its small-machine fit."})

    def _name(self, field: str) -> str:
        return flag(field)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)
                                      or self.seed < 0):
            raise ValueError(f"--seed must be an integer >= 0, got {self.seed!r}")

    def as_dict(self) -> dict[str, Any]:
        """Only what the user set, for the result."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        if not self.full_scale:
            out.pop("full_scale")
        return out

    @classmethod
    def from_saved(cls, d: dict[str, Any]) -> Overrides:
        """A saved run's overrides (result.json's `schedule.overrides`, `as_dict()`'s output). Checked like the
        command line; a value today's ranges refuse (a run made before a range was tightened) is kept as saved
        rather than refusing a run that was valid when it was made. A key that is no override is dropped."""
        kw = {f.name: d[f.name] for f in fields(cls) if d.get(f.name) is not None}
        try:
            return cls(**kw)
        except (TypeError, ValueError):
            saved = object.__new__(cls)
            for f in fields(cls):
                object.__setattr__(saved, f.name, kw.get(f.name, f.default))
            return saved
