"""Where an engine advisor loads itself runs, and where the client runs: CPU placement, decided once.

A busy engine must not delay the load generator's sends, and the load generator
must not steal the engine's cores. On a machine with at least two CPUs (in
this process's affinity), the engine gets `threads` CPUs (default: all but
one) and is pinned to the last ones; the client is pinned to the others for
the measured run. When the engine is asked for every CPU, nothing is pinned
and the placement says that the client shares the engine's cores. The result
records the placement (`EngineInfo.placement`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fileform import FileForm


def available_cpus() -> tuple[int, ...]:
    """CPUs this process may run on (its affinity), sorted."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux: no affinity API, count the cores
        return tuple(range(os.cpu_count() or 1))


@dataclass(frozen=True)
class Placement(FileForm):
    engine_threads: int
    engine_cpus: tuple[int, ...] | None  # None: not pinned
    client_cpus: tuple[int, ...] | None  # None: not pinned
    note: str


def plan(threads: int | None, cpus: tuple[int, ...] | None = None) -> Placement:
    """The placement for an engine asked for `threads` CPU threads (None: all CPUs but one)."""
    cpus = cpus if cpus is not None else available_cpus()
    n = len(cpus)
    if n < 2:
        return Placement(threads or 1, None, None, "one CPU: the engine and the client share it")
    t = threads or n - 1
    if t <= n - 1:
        engine, client = cpus[n - t:], cpus[: n - t]
        return Placement(t, engine, client, f"engine pinned to CPU {_span(engine)}, client to CPU {_span(client)}")
    return Placement(t, None, None, f"engine threads ({t}) use every CPU ({n}): the client shares them, so "
                                    "sends may lag while the engine computes")


def _span(cpus: tuple[int, ...]) -> str:
    return ",".join(str(c) for c in cpus)


def pin_self(cpus: list[int] | tuple[int, ...] | None) -> None:
    """Pin this process to `cpus` (no-op for None or where the OS has no affinity API)."""
    if cpus:
        with contextlib.suppress(AttributeError, OSError):
            os.sched_setaffinity(0, set(cpus))


@contextlib.contextmanager
def client_pinned(placement: dict[str, Any] | None) -> Iterator[None]:
    """Pin this (client) process to the placement's client CPUs for the block, then restore its affinity."""
    cpus = (placement or {}).get("client_cpus")
    if not cpus:
        yield
        return
    before = available_cpus()
    pin_self(cpus)
    try:
        yield
    finally:
        pin_self(before)
