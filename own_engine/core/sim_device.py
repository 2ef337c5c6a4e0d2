"""A simulated device for own_engine: the real engine around a forward that only sleeps.

`LLMEngine(EngineConfig(device="sim:h200"))` runs the real scheduler, block
manager, async front, process boundary and client, but its runner
(`sim_runner.SimRunner`) has a forward that is `time.sleep(step time)`,
which releases the GIL as a CUDA synchronisation does, and it returns
deterministic token ids instead of sampling logits. This module holds the
profiles (step times) and their spelling; the step time is given per step
from its shape:

    step_s = decode_ms(rows that feed one token) + prefill_ms_per_token x (tokens of prefill chunks)

with `decode_ms` linear between the profile's (batch, ms) points (flat past
the ends) and no decode part when a step carries only prefill chunks. So a
GPU's host-bound case (steps of 2-10 ms, where the serving layers' work per
step and per token is as large as the step) runs on any laptop and in CI.

Kernel launches (`eager_ops`): on a GPU the host launches every kernel of a
step from Python, and each PyTorch op takes the GIL for its argument parsing
and gives it back inside the op, so a thread of the same process that holds
the GIL (an event loop doing per-token work) delays every launch: the
engine thread convoys behind it. A sleeping forward gives the GIL up once
per step and hides that. So a step that is not a CUDA-graph replay (any step
with a prompt chunk, or a decode batch past the graphs' largest bucket)
first issues `eager_ops` real PyTorch ops on the host (each parses its
arguments holding the GIL, gives it up inside the op and takes it back, as a
launch does; `launch_op`, whose work stays on the launching thread; its tensor is
sized once so that one op takes about `launch_us`,
5 us by default: PyTorch's eager overhead per CUDA op is 5-10 us, and the
H200's eager 1,024-token prefill, 917 ops in 7.6 ms, bounds it at 8.3 us), and
a graph replay issues one;
then it waits for the rest of the step time, GIL released (launches overlap
the device's work on a GPU, so the step takes the longer of the two); the
wait's last millisecond spins with the GIL released, as a CUDA sync does,
because a timer alone woke late here. `eager_ops=0` (a
custom profile's default) is the plain sleep.

Presets come from measured hardware: `h200` is own_engine's `llama-1b` (bf16,
CUDA graphs) on one NVIDIA H200, 2026-11-26 (shared/gpu-runs/h200-2026-11-26):
decode 2.20 ms at batch 1, 2.43 ms at 8, 3.40 ms at 64; 1,024 prompt tokens
in 7.6 ms; 917 ops per eager step (own_engine's forward for llama-1b's 16
layers: 37 + 55 per layer, counted with a TorchDispatchMode on a mixed step
of the torch route, 2026-11-26; `benchmarks/eager_ops.py`).
A custom profile is spelled `sim:1=2.2,8=2.43,64=3.4,prefill=7.6[,ops=917][,prompt_step=85]`
(batch=ms pairs, ms per 1,024 prefill tokens, host ops per eager step, and a fixed time every step that
carries prompt tokens adds: a what-if knob, 0 unless given; benchmarks/RESULTS.md, "Where the H200's served
time went", uses it to ask whether the H200's step times alone give its served figures).

A simulated device is never hardware: the run's engine info says so
(`EngineInfo.device` starts with `sim:`, `extra.simulated_device`), and
advisor never prices such a run or recommends from it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

PREFILL_TOKENS_PER_UNIT = 1024
GRAPH_MAX_BATCH = 256  # own_engine.kernels.cuda_graph.BATCH_BUCKETS[-1]: larger decode batches run eagerly


class SimDeviceError(ValueError):
    """A `sim:` device string that does not parse; the message shows the spelling."""


@dataclass(frozen=True)
class SimProfile:
    """Step times of a simulated device: decode ms at some batch sizes, ms per 1,024 prefill tokens."""

    name: str
    decode_ms: tuple[tuple[int, float], ...]  # (batch size, ms), batch sizes increasing
    prefill_ms_per_1k: float
    source: str = "custom"
    eager_ops: int = 0  # host ops (kernel launches) of a step that is not a graph replay; 0: a plain sleep
    launch_us: float = 5.0  # host time of one launch
    prompt_step_ms: float = 0.0  # a fixed device time of every step that carries prompt tokens (a what-if knob)

    def __post_init__(self) -> None:
        if not self.decode_ms or any(b < 1 or ms < 0 for b, ms in self.decode_ms):
            raise SimDeviceError(f"decode points must be batch >= 1 and ms >= 0, got {self.decode_ms}")
        if [b for b, _ in self.decode_ms] != sorted({b for b, _ in self.decode_ms}):
            raise SimDeviceError(f"decode batch sizes must increase, got {[b for b, _ in self.decode_ms]}")
        if self.prefill_ms_per_1k < 0:
            raise SimDeviceError(f"prefill ms must be >= 0, got {self.prefill_ms_per_1k}")
        if self.eager_ops < 0 or self.launch_us <= 0:
            raise SimDeviceError(f"ops must be >= 0 and launch_us > 0, got {self.eager_ops} and {self.launch_us}")
        if self.prompt_step_ms < 0:
            raise SimDeviceError(f"prompt_step must be >= 0 ms, got {self.prompt_step_ms}")

    def launches(self, num_decode_rows: int, num_prefill_tokens: int) -> int:
        """Host ops one step issues: one graph replay for a decode-only step that fits the graphs, else eager_ops."""
        if not self.eager_ops:
            return 0
        return 1 if not num_prefill_tokens and num_decode_rows <= GRAPH_MAX_BATCH else self.eager_ops

    def decode_step_ms(self, batch: int) -> float:
        """Decode time of a step of `batch` one-token rows: linear between the points, flat past the ends."""
        sizes = [b for b, _ in self.decode_ms]
        i = bisect.bisect_left(sizes, batch)
        if i == 0:
            return self.decode_ms[0][1]
        if i == len(sizes):
            return self.decode_ms[-1][1]
        (b0, m0), (b1, m1) = self.decode_ms[i - 1], self.decode_ms[i]
        return m0 + (m1 - m0) * (batch - b0) / (b1 - b0)

    def step_s(self, num_decode_rows: int, num_prefill_tokens: int) -> float:
        """Seconds one step of this shape takes on the simulated device."""
        ms = self.decode_step_ms(num_decode_rows) if num_decode_rows else 0.0
        if num_prefill_tokens:
            ms += self.prefill_ms_per_1k * num_prefill_tokens / PREFILL_TOKENS_PER_UNIT + self.prompt_step_ms
        return ms / 1e3

    @property
    def device(self) -> str:
        """The device string that selects this profile."""
        return f"sim:{self.name}" if self.name in PRESETS else self.spec

    @property
    def spec(self) -> str:
        points = ",".join(f"{b}={ms:g}" for b, ms in self.decode_ms)
        ops = f",ops={self.eager_ops},launch_us={self.launch_us:g}" if self.eager_ops else ""
        fixed = f",prompt_step={self.prompt_step_ms:g}" if self.prompt_step_ms else ""
        return f"sim:{points},prefill={self.prefill_ms_per_1k:g}{ops}{fixed}"

    def to_dict(self) -> dict:  # hand-written: a computed view (JSON built from properties, never read back)
        return {"name": self.name, "device": self.device, "spec": self.spec, "source": self.source,
                "decode_ms": [[b, ms] for b, ms in self.decode_ms], "prefill_ms_per_1k_tokens": self.prefill_ms_per_1k,
                "eager_ops": self.eager_ops, "launch_us": self.launch_us, "prompt_step_ms": self.prompt_step_ms,
                "note": "SIMULATED device: the forward issues the profile's host ops, then sleeps for the rest of its "
                        "step time; not hardware, never priced"}


PRESETS = {
    "h200": SimProfile("h200", ((1, 2.20), (8, 2.43), (64, 3.40)), 7.6,
                       source="own_engine llama-1b bf16 on one NVIDIA H200, 2026-11-26 "
                              "(shared/gpu-runs/h200-2026-11-26); 917 eager ops: own_engine's forward for "
                              "llama-1b's 16 layers, counted on CPU",
                       eager_ops=917),
}


def is_sim(device: str) -> bool:
    return device == "sim" or device.startswith("sim:")


def parse_sim(device: str) -> SimProfile:
    """`sim` (the h200 preset), `sim:PRESET`, or `sim:B=MS,...,prefill=MS[,ops=N]` (custom)."""
    body = device.partition(":")[2].strip() or "h200"
    if body in PRESETS:
        return PRESETS[body]
    points: list[tuple[int, float]] = []
    prefill = None
    ops, launch_us, prompt_step = 0, 5.0, 0.0
    try:
        for part in body.split(","):
            key, _, value = part.partition("=")
            if key.strip() == "prefill":
                prefill = float(value)
            elif key.strip() == "ops":
                ops = int(value)
            elif key.strip() == "launch_us":
                launch_us = float(value)
            elif key.strip() == "prompt_step":
                prompt_step = float(value)
            else:
                points.append((int(key), float(value)))
    except ValueError:
        prefill = None
    if prefill is None or not points:
        raise SimDeviceError(f"unknown simulated device '{device}'; use sim:{' or sim:'.join(PRESETS)}, or "
                             "sim:1=2.2,8=2.43,64=3.4,prefill=7.6[,ops=917,launch_us=5,prompt_step=0] (decode ms at batch "
                             "sizes, ms per 1,024 prefill tokens, host ops per eager step and us per op, fixed ms of a "
                             "step that carries a prompt)")
    try:
        return SimProfile("custom", tuple(sorted(points)), prefill, eager_ops=ops, launch_us=launch_us,
                          prompt_step_ms=prompt_step)
    except SimDeviceError as e:
        raise SimDeviceError(f"simulated device '{device}': {e}") from None
