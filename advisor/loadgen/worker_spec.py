"""`--workers` (bench, sweep) and a matrix cell's `workers:`: how many load generators, and where.

    auto     one process per CPU the client may use (served engines; one driver otherwise, and one while an open
             loop's peak rate is well within one process's measured capacity: advisor.loadgen.workers.count)
    N        N processes on this machine, at most one per CPU advisor may use (`check_here`)
    ray:N    N Ray actors spread over a Ray cluster's nodes (`advisor.loadgen.ray_workers`)

One parser for every spelling, so the CLI and the matrix plan say the same thing about a bad value.
"""

from __future__ import annotations

import re
from typing import Literal

Workers = int | Literal["auto"] | str  # "auto", N >= 1, or "ray:N" (normalised by `parse`)
_RAY = re.compile(r"ray:(\S*)")


class WorkersError(ValueError):
    """A `--workers` value that is not one of the three spellings; the message says which are."""


def parse(value: object, name: str = "--workers") -> Workers:
    """'auto', an int >= 1 or 'ray:N' (N >= 1); anything else is a WorkersError naming `name`."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 1:
            return value
    elif isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return "auto"
        if text.isdigit() and int(text) >= 1:
            return int(text)
        m = _RAY.fullmatch(text)
        if m and m.group(1).isdigit() and int(m.group(1)) >= 1:
            return f"ray:{int(m.group(1))}"
        if m:
            raise WorkersError(f"{name} {value}: ray:N needs a whole number of Ray actors N >= 1, e.g. ray:4")
    raise WorkersError(f"{name} must be 'auto', an integer >= 1 or ray:N (N Ray actors), got {value!r}")


def on_ray(workers: Workers) -> int | None:
    """N for 'ray:N' (already parsed), None for local workers."""
    if isinstance(workers, str) and workers.startswith("ray:"):
        return int(workers.removeprefix("ray:"))
    return None


def several(workers: Workers) -> bool:
    """Whether the value asks for more than this one driver (ray:N always does: the load runs elsewhere)."""
    return workers not in ("auto", 1)


def check_here(workers: Workers, cpus: int, name: str = "--workers") -> None:
    """Refuse N local workers above `cpus`, the CPUs this process may use (ray:N and auto are not capped here).

    One worker per CPU is what `auto` gives and the most that adds sending capacity: a worker beyond it only
    shares a CPU with another, and costs an interpreter (~50 MB) and its start (1000 asked of 2 CPUs was 2.6 GB).
    """
    if isinstance(workers, int) and workers > cpus:
        raise WorkersError(f"{name} {workers}: at most {cpus} here, one per CPU advisor may use (a worker beyond "
                           "one per CPU only shares a CPU and adds an interpreter); use --workers auto, or ray:N "
                           "to spread the load over several machines")
