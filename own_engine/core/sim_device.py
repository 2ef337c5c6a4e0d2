"""A simulated device for own_engine: the real engine around a forward that only sleeps.

`LLMEngine(device="sim:h200")` runs the real scheduler, block manager,
async front, process boundary and client, but its model runner's forward is
`time.sleep(step time)`, which releases the GIL as a CUDA synchronisation
does, and it returns deterministic token ids instead of sampling logits. The
step time is given per step from its shape:

    step_s = decode_ms(rows that feed one token) + prefill_ms_per_token x (tokens of prefill chunks)

with `decode_ms` linear between the profile's (batch, ms) points (flat past
the ends) and no decode part when a step carries only prefill chunks. So a
GPU's host-bound case (steps of 2-10 ms, where the serving layers' work per
step and per token is as large as the step) runs on any laptop and in CI.

Presets come from measured hardware: `h200` is own_engine's `llama-1b` (bf16,
CUDA graphs) on one NVIDIA H200, 2026-11-26 (shared/gpu-runs/h200-2026-11-26):
decode 2.20 ms at batch 1, 2.43 ms at 8, 3.40 ms at 64; 1,024 prompt tokens
in 7.6 ms. A custom profile is spelled `sim:1=2.2,8=2.43,64=3.4,prefill=7.6`
(batch=ms pairs, and ms per 1,024 prefill tokens).

A simulated device is never hardware: the run's engine info says so
(`EngineInfo.device` starts with `sim:`, `extra.simulated_device`), and
advisor never prices such a run or recommends from it.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass

import torch

from own_engine.core.scheduler import ScheduledBatch
from own_engine.core.sequence import Sequence
from own_engine.core.step_clock import StepClock

PREFILL_TOKENS_PER_UNIT = 1024


class SimDeviceError(ValueError):
    """A `sim:` device string that does not parse; the message shows the spelling."""


@dataclass(frozen=True)
class SimProfile:
    """Step times of a simulated device: decode ms at some batch sizes, ms per 1,024 prefill tokens."""

    name: str
    decode_ms: tuple[tuple[int, float], ...]  # (batch size, ms), batch sizes increasing
    prefill_ms_per_1k: float
    source: str = "custom"

    def __post_init__(self) -> None:
        if not self.decode_ms or any(b < 1 or ms < 0 for b, ms in self.decode_ms):
            raise SimDeviceError(f"decode points must be batch >= 1 and ms >= 0, got {self.decode_ms}")
        if [b for b, _ in self.decode_ms] != sorted({b for b, _ in self.decode_ms}):
            raise SimDeviceError(f"decode batch sizes must increase, got {[b for b, _ in self.decode_ms]}")
        if self.prefill_ms_per_1k < 0:
            raise SimDeviceError(f"prefill ms must be >= 0, got {self.prefill_ms_per_1k}")

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
        ms += self.prefill_ms_per_1k * num_prefill_tokens / PREFILL_TOKENS_PER_UNIT
        return ms / 1e3

    @property
    def device(self) -> str:
        """The device string that selects this profile."""
        return f"sim:{self.name}" if self.name in PRESETS else self.spec

    @property
    def spec(self) -> str:
        points = ",".join(f"{b}={ms:g}" for b, ms in self.decode_ms)
        return f"sim:{points},prefill={self.prefill_ms_per_1k:g}"

    def to_dict(self) -> dict:
        return {"name": self.name, "device": self.device, "spec": self.spec, "source": self.source,
                "decode_ms": [[b, ms] for b, ms in self.decode_ms], "prefill_ms_per_1k_tokens": self.prefill_ms_per_1k,
                "note": "SIMULATED device: the forward sleeps for the profile's step time; not hardware, never priced"}


PRESETS = {
    "h200": SimProfile("h200", ((1, 2.20), (8, 2.43), (64, 3.40)), 7.6,
                       source="own_engine llama-1b bf16 on one NVIDIA H200, 2026-11-26 "
                              "(shared/gpu-runs/h200-2026-11-26)"),
}


def is_sim(device: str) -> bool:
    return device == "sim" or device.startswith("sim:")


def parse_sim(device: str) -> SimProfile:
    """`sim` (the h200 preset), `sim:PRESET`, or `sim:B=MS,...,prefill=MS` (custom)."""
    body = device.partition(":")[2].strip() or "h200"
    if body in PRESETS:
        return PRESETS[body]
    points: list[tuple[int, float]] = []
    prefill = None
    try:
        for part in body.split(","):
            key, _, value = part.partition("=")
            if key.strip() == "prefill":
                prefill = float(value)
            else:
                points.append((int(key), float(value)))
    except ValueError:
        prefill = None
    if prefill is None or not points:
        raise SimDeviceError(f"unknown simulated device '{device}'; use sim:{' or sim:'.join(PRESETS)}, or "
                             "sim:1=2.2,8=2.43,64=3.4,prefill=7.6 (decode ms at batch sizes, ms per 1,024 prefill tokens)")
    try:
        return SimProfile("custom", tuple(sorted(points)), prefill)
    except SimDeviceError as e:
        raise SimDeviceError(f"simulated device '{device}': {e}") from None


class SimRunner:
    """The model runner's interface on a simulated device: real host-side input preparation, a sleeping forward."""

    graphs = None
    native = None

    def __init__(self, profile: SimProfile, *, vocab_size: int, eos_token_ids: tuple[int, ...], block_size: int,
                 clock: StepClock) -> None:
        self.profile = profile
        self.vocab_size = vocab_size
        self.eos = frozenset(eos_token_ids)
        self.block_size = block_size
        self.clock = clock
        from own_engine.core.memory_release import KVPageRelease

        self.release_blocks = KVPageRelease([])  # no cache memory to give back

    def prepare(self, batch: ScheduledBatch) -> torch.Tensor:
        """The same host work a GPU step's inputs take: ids, positions and cache slots as one host tensor, and the
        decode rows' block tables padded into one tensor."""
        bs = self.block_size
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        for seq, n in zip(batch.seqs, batch.num_new_tokens, strict=True):
            p0, table = seq.num_computed_tokens, seq.block_table
            ids.extend(seq.token_ids[p0:p0 + n])
            positions.extend(range(p0, p0 + n))
            slots.extend(table[p // bs] * bs + p % bs for p in range(p0, p0 + n))
        nd = batch.num_decodes
        if nd:
            width = max(len(s.block_table) for s in batch.seqs[:nd])
            torch.tensor([s.block_table + [0] * (width - len(s.block_table)) for s in batch.seqs[:nd]],
                         dtype=torch.long)
        return torch.tensor([ids, positions, slots], dtype=torch.long)

    def run(self, batch: ScheduledBatch) -> list[int]:
        """Sleep for the step's simulated time (GIL released); one deterministic token per finishing sequence."""
        self.prepare(batch)
        self.clock.mark_forward_start()
        nd = batch.num_decodes
        step_s = self.profile.step_s(nd, sum(batch.num_new_tokens[nd:]))
        time.sleep(step_s)
        self.clock.mark_forward_end(device_ns=round(step_s * 1e9))
        done = [s for s, n in zip(batch.seqs, batch.num_new_tokens, strict=True) if s.num_computed_tokens + n == len(s)]
        return [self.token(s) for s in done]

    def token(self, seq: Sequence) -> int:
        """A token that depends only on the sequence's length and last token; never an EOS id."""
        tok = (seq.token_ids[-1] * 31 + len(seq) * 7 + 3) % self.vocab_size
        while tok in self.eos:
            tok = (tok + 1) % self.vocab_size
        return tok
