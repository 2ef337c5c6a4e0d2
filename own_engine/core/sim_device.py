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
import hashlib
import time
from dataclasses import dataclass

import torch

from own_engine.core.host_tensors import host_long
from own_engine.core.scheduler import ScheduledBatch
from own_engine.core.sequence import Sequence
from own_engine.core.step_clock import StepClock

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

    def to_dict(self) -> dict:
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


class SimRunner:
    """The model runner's interface on a simulated device: real host-side input preparation, a sleeping forward."""

    graphs = None
    native = None
    supports_overlap = True  # `launch` returns before the step's device time has passed

    def __init__(self, profile: SimProfile, *, vocab_size: int, eos_token_ids: tuple[int, ...], block_size: int,
                 clock: StepClock) -> None:
        self.profile = profile
        self.vocab_size = vocab_size
        self.eos = frozenset(eos_token_ids)
        self.block_size = block_size
        self.clock = clock
        from own_engine.core.memory_release import KVPageRelease

        self.release_blocks = KVPageRelease([])  # no cache memory to give back
        self._op_in, self._op_out = _launch_tensors(profile.launch_us) if profile.eager_ops else (None, None)
        self._free_at = 0.0  # perf_counter when the simulated device finishes the last step launched

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
            host_long([s.block_table + [0] * (width - len(s.block_table)) for s in batch.seqs[:nd]])
        return host_long([ids, positions, slots])

    def run(self, batch: ScheduledBatch) -> list[int]:
        """Issue the step's launches, sleep for the rest of its simulated time (GIL released); one deterministic
        token per finishing sequence."""
        self.prepare(batch)
        self.clock.mark_forward_start()
        t0, step_s = self._issue(batch)
        _wait_device(t0 + step_s)
        self.clock.mark_forward_end(device_ns=round(step_s * 1e9))
        done = [s for s, n in zip(batch.seqs, batch.num_new_tokens, strict=True) if s.num_computed_tokens + n == len(s)]
        return [self.token(s) for s in done]

    def _issue(self, batch: ScheduledBatch) -> tuple[float, float]:
        """The step's host launches (the profile's ops); returns when they began (perf_counter) and its step time."""
        t0 = time.perf_counter()
        nd = batch.num_decodes
        prefill_tokens = sum(batch.num_new_tokens[nd:])
        a, out = self._op_in, self._op_out
        for _ in range(self.profile.launches(nd, prefill_tokens)):
            launch_op(a, out)
        return t0, self.profile.step_s(nd, prefill_tokens)

    def describe(self) -> dict:
        return {**self.profile.to_dict(), "launch_elements": 0 if self._op_in is None else self._op_in.numel()}

    def token(self, seq: Sequence) -> int:
        """A token that depends only on the sequence's length and last token; never an EOS id."""
        return self.token_at(seq, len(seq))

    def token_at(self, seq: Sequence, i: int) -> int:
        """`token` of the sequence's first `i` tokens (0 where those are gone: a stop cut them off)."""
        if not 0 < i <= len(seq.token_ids):
            return 0
        tok = (seq.token_ids[i - 1] * 31 + i * 7 + 3) % self.vocab_size
        while tok in self.eos:
            tok = (tok + 1) % self.vocab_size
        return tok

    def launch(self, batch: ScheduledBatch) -> SimStep:
        """Overlap scheduling: prepare the step's inputs and issue its launches, then return without waiting. The
        simulated device is one stream: the step starts when it is launched or when the step before it ends,
        whichever is later, and ends its step time after that (or when the launches end, if later: a host-bound
        step). `SimStep.result()` waits for the end, GIL released, as a CUDA sync does."""
        self.prepare(batch)
        t0, step_s = self._issue(batch)
        self._free_at = max(max(t0, self._free_at) + step_s, time.perf_counter())
        rows = [(s, len(s)) for s, n in zip(batch.seqs, batch.num_new_tokens, strict=True)
                if s.num_computed_tokens + n == len(s)]
        return SimStep(self, rows, self._free_at)


@dataclass(frozen=True)
class SimStep:
    """A launched step on the simulated device (`SimRunner.launch`): its sampling rows and when it ends."""

    runner: SimRunner
    rows: list[tuple[Sequence, int]]  # (sequence, the index its new token takes)
    done_at: float  # perf_counter

    def result(self) -> list[int]:
        """Wait for the step's end; its token per row, computed now (the step before has been resolved)."""
        _wait_device(self.done_at)
        return [self.runner.token_at(seq, i) for seq, i in self.rows]


_TIMER_MARGIN_S = 1e-3  # this much before the deadline the wait stops trusting the OS timer
_SPIN_BUFFER = bytes(4096)


def _wait_device(deadline: float) -> None:
    """Wait until `deadline` (perf_counter) with the GIL released, as a CUDA synchronisation waits: a timer sleep
    for all but the last millisecond (VM timers wake 0.1-0.6 ms late on a 2 ms sleep, which made the simulated
    step time noise), then a spin that holds the GIL only between hashes, as a spinning sync does (`sleep(0)`
    gave the CPU away for 80 us at a time on a busy machine)."""
    rest = deadline - time.perf_counter()
    if rest > 2 * _TIMER_MARGIN_S:
        time.sleep(rest - _TIMER_MARGIN_S)
    while time.perf_counter() < deadline:
        hashlib.sha256(_SPIN_BUFFER)  # a few microseconds of CPU with the GIL released (hashlib does, past 2 KiB)


def launch_op(a: torch.Tensor, out: torch.Tensor) -> None:
    """One simulated kernel launch: a real PyTorch op (the GIL taken for its arguments, given up inside), whose
    work runs on the calling thread only, at any torch thread count, as a launch's host work does. A cumulative
    sum along a tensor's one dimension is serial in PyTorch's CPU kernel; an element-wise op of the size a 5 us
    launch needs (131,072 elements here) is split over torch's thread pool, so each launch waited for a second
    CPU: with the engine at torch's default 2 threads and the other CPU busy, 1 launch in 1,000 took 4 ms, and
    one 917-launch step 0.5 s (benchmarks/history/serving_overhead.md, 2026-11-27)."""
    torch.cumsum(a, 0, out=out)


def _launch_tensors(launch_us: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Tensors sized so that `launch_op` takes about `launch_us` on this host (measured once): the size doubles
    until one op takes at least `launch_us`, then is set between the last two sizes by linear interpolation (a
    cumulative sum's time is linear in its length), so a launch is not up to twice the profile's."""
    def per_op_us(n: int) -> float:
        a, out = torch.ones(n), torch.empty(n)
        for _ in range(20):
            launch_op(a, out)
        best = float("inf")
        for _ in range(3):  # the least of three: a busy moment of the machine makes an op slower, never faster
            t0 = time.perf_counter()
            for _ in range(100):
                launch_op(a, out)
            best = min(best, (time.perf_counter() - t0) / 100 * 1e6)
        return best

    lo, t_lo = 0, 0.0
    n = 256
    while n < 1 << 22:
        t = per_op_us(n)
        if t >= launch_us:
            if lo:
                n = max(lo, round(lo + (launch_us - t_lo) / (t - t_lo) * (n - lo)))
            break
        lo, t_lo, n = n, t, n * 2
    return torch.ones(n), torch.empty(n)
