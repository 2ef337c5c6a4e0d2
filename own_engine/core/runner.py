"""Runner: what `LLMEngine` asks of the part that turns a scheduled batch into next tokens.

Two implement it: `ModelRunner` (the model on CPU or CUDA, `model_runner`) and `SimRunner` (a simulated
device whose forward sleeps, `sim_runner`). A runner is built from the `EngineConfig` and decides what
depends on its device: the model's placement and precision, the kernel backend, the KV cache's size in
blocks, the per-step token budget, and whether overlap scheduling is on by default. The engine reads these
and never asks which runner it has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

    from own_engine.core.scheduler import ScheduledBatch
    from own_engine.core.step_clock import StepClock
    from own_engine.kernels.backends import KernelChoice
    from own_engine.model.llama import LlamaModel


@runtime_checkable
class LaunchedStep(Protocol):
    """A step launched without waiting (`Runner.launch`)."""

    def result(self) -> list[int]:
        """Wait for the step; its token ids, one per sequence whose uncomputed tokens it finished."""
        ...


@runtime_checkable
class Runner(Protocol):
    model: LlamaModel  # the loaded model (on a simulated device: on CPU, for its shape only)
    device: torch.device  # where the model's tensors live
    device_name: str  # the device as a report names it
    kernels: KernelChoice  # the kernel backend behind the model's interfaces
    clock: StepClock  # where each step's time goes; the runner marks its forward
    num_kv_blocks: int  # blocks the KV cache holds
    max_num_batched_tokens: int  # the per-step token budget, decode rows and prefill tokens together
    overlap: bool  # whether the engine schedules step n+1 while step n runs (`launch`)
    on_blocks_freed: Callable[[list[int]], None] | None  # what to call with freed KV blocks; None: nothing to do

    def run(self, batch: ScheduledBatch) -> list[int]:
        """The next token of every sequence whose uncomputed tokens this step finishes, in batch order."""
        ...

    def launch(self, batch: ScheduledBatch) -> LaunchedStep:
        """Start the step and return without waiting for its tokens (overlap scheduling)."""
        ...

    def describe(self) -> dict:
        """The runner's part of `LLMEngine.describe()`."""
        ...
