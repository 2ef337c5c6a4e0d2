"""SimRunner: the `Runner` of a simulated device (`sim_device`): real host-side input preparation and kernel
launches around a forward that waits out the profile's step time, and deterministic tokens instead of sampled ones.

The model is loaded on CPU at fp32 for its shape only (vocab, EOS ids, context, KV bytes per token); it never
runs. No KV cache memory is allocated, so by default the cache has room for every sequence at full length, and
the token budget is a GPU's (`runner_defaults.GPU_TOKEN_BUDGET`). Overlap scheduling is on by default: `launch`
returns before the step's device time has passed, as a CUDA launch does.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from own_engine.core.host_tensors import host_long
from own_engine.core.runner_defaults import default_token_budget, kv_cache_blocks
from own_engine.core.scheduler import ScheduledBatch
from own_engine.core.sequence import Sequence
from own_engine.core.sim_device import parse_sim
from own_engine.core.step_clock import StepClock
from own_engine.kernels.backends import SIMULATED
from own_engine.model.loader import load_model

if TYPE_CHECKING:
    from own_engine.core.engine_config import EngineConfig


class SimRunner:
    """The `Runner` (`own_engine.core.runner`) of a simulated device."""

    def __init__(self, config: EngineConfig, model_path: Path) -> None:
        profile = self.profile = parse_sim(config.device)
        self.device = torch.device("cpu")
        self.device_name = f"{profile.device} (SIMULATED step times {profile.spec}, not hardware)"
        self.model = load_model(model_path, device=self.device, dtype="fp32", max_model_len=config.max_model_len)
        self.kernels = SIMULATED
        self.clock = StepClock(forward_is_device=True)  # the forward's wait stands for device time
        self.vocab_size = self.model.cfg.vocab_size
        self.eos = frozenset(self.model.cfg.eos_token_ids)
        self.block_size = config.block_size
        self.max_num_batched_tokens = config.max_num_batched_tokens or default_token_budget(True, config.max_num_seqs)
        self.num_kv_blocks = kv_cache_blocks(config, self.model, memory=None)  # no memory is allocated
        self.overlap = True if config.overlap is None else config.overlap
        self.on_blocks_freed = None  # no cache memory to give back
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
        launch_elements = 0 if self._op_in is None else self._op_in.numel()
        return {"cuda_graphs": False, "kv_page_release": False,
                "simulated_device": {**self.profile.to_dict(), "launch_elements": launch_elements}}

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
    for all but the last millisecond (a VM's timer wakes late by a sizeable share of a 2 ms sleep, which would
    make the simulated step time noise), then a spin that holds the GIL only between hashes, as a spinning sync
    does (`sleep(0)` gives the CPU away for tens of microseconds at a time on a busy machine). The measurements:
    benchmarks/history/own_engine.md."""
    rest = deadline - time.perf_counter()
    if rest > 2 * _TIMER_MARGIN_S:
        time.sleep(rest - _TIMER_MARGIN_S)
    while time.perf_counter() < deadline:
        hashlib.sha256(_SPIN_BUFFER)  # a few microseconds of CPU with the GIL released (hashlib does, past 2 KiB)


def launch_op(a: torch.Tensor, out: torch.Tensor) -> None:
    """One simulated kernel launch: a real PyTorch op (the GIL taken for its arguments, given up inside), whose
    work runs on the calling thread only, at any torch thread count, as a launch's host work does. A cumulative
    sum along a tensor's one dimension is serial in PyTorch's CPU kernel; an element-wise op of the size a 5 us
    launch needs is split over torch's thread pool, so each launch would wait for a second CPU, and with the
    other CPU busy a few launches in a step take milliseconds (benchmarks/sim_launch.py measures both;
    benchmarks/history/serving_overhead.md)."""
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
