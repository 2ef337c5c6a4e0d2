"""The `Runner` contract (own_engine.core.runner): `ModelRunner` and the simulated device's `SimRunner` each
implement every member the engine reads, in their own class, and each decides its device's defaults."""

from __future__ import annotations

import inspect

import pytest

from own_engine.core.block_manager import BlockManager
from own_engine.core.engine_config import EngineConfig
from own_engine.core.model_runner import ModelRunner
from own_engine.core.runner import LaunchedStep, Runner
from own_engine.core.runner_defaults import CPU_TOKEN_BUDGET, GPU_TOKEN_BUDGET
from own_engine.core.sampling_params import SamplingParams
from own_engine.core.scheduler import Scheduler
from own_engine.core.sequence import Sequence
from own_engine.core.sim_runner import SimRunner

SIM = "sim:1=0.1,prefill=0.1"
DATA_MEMBERS = [name for name in inspect.get_annotations(Runner)]
METHODS = [name for name, v in vars(Runner).items() if inspect.isfunction(v) and not name.startswith("_")]


def _runner(kind: type, path) -> Runner:
    return kind(EngineConfig(path, device=SIM if kind is SimRunner else "cpu", max_num_seqs=4, block_size=4), path)


def test_the_contract_names_what_the_engine_reads() -> None:
    assert set(METHODS) == {"run", "launch", "describe"}
    assert {"model", "clock", "num_kv_blocks", "max_num_batched_tokens", "overlap", "on_blocks_freed"} <= set(DATA_MEMBERS)


@pytest.mark.parametrize("kind", [ModelRunner, SimRunner])
def test_each_runner_implements_every_member_itself(tiny_path, kind) -> None:
    runner = _runner(kind, tiny_path)
    assert isinstance(runner, Runner)
    assert Runner not in kind.__mro__  # structural: nothing inherited from the protocol's `...` bodies
    for name in METHODS:
        assert name in vars(kind), f"{kind.__name__}.{name} is not defined by {kind.__name__}"
        assert inspect.signature(getattr(kind, name)).parameters.keys() == \
            inspect.signature(getattr(Runner, name)).parameters.keys()
    for name in DATA_MEMBERS:
        assert name in vars(runner), f"{kind.__name__} does not set {name}"


@pytest.mark.parametrize("kind", [ModelRunner, SimRunner])
def test_a_launched_step_gives_the_tokens_run_gives(tiny_path, kind) -> None:
    """`launch(...).result()` and `run(...)` of the same batch agree (greedy), and the launch is a LaunchedStep."""
    outs = []
    for how in ("run", "launch"):
        runner = _runner(kind, tiny_path)
        scheduler = Scheduler(BlockManager(runner.num_kv_blocks, 4), max_num_seqs=4,
                              max_num_batched_tokens=runner.max_num_batched_tokens,
                              max_model_len=runner.model.max_model_len, eos_token_ids=())
        for prompt in ([5, 6, 7], [9] * 10):
            scheduler.add(Sequence(prompt, SamplingParams(max_tokens=4, ignore_eos=True)))
        batch = scheduler.schedule()
        if how == "launch":
            step = runner.launch(batch)
            assert isinstance(step, LaunchedStep)
            outs.append(step.result())
        else:
            outs.append(runner.run(batch))
    assert outs[0] == outs[1] and len(outs[0]) == 2


def test_each_runner_decides_its_devices_defaults(tiny_path) -> None:
    cpu, sim = _runner(ModelRunner, tiny_path), _runner(SimRunner, tiny_path)
    assert cpu.max_num_batched_tokens == CPU_TOKEN_BUDGET and sim.max_num_batched_tokens == GPU_TOKEN_BUDGET
    assert cpu.overlap is False and sim.overlap is True
    per_seq = -(-sim.model.max_model_len // 4)
    assert sim.num_kv_blocks == 4 * per_seq  # no memory to cap it: every sequence at full length
    assert sim.on_blocks_freed is None and sim.describe()["simulated_device"]["device"] == SIM
    assert cpu.describe()["simulated_device"] is None and cpu.device_name == "cpu"
    assert "SIMULATED" in sim.device_name
