"""What the load generator says about its own run: result.json's `loadgen` object, typed.

Written once by `advisor.run.bench`; its file form follows from the fields (fileform: a run written before
a key existed reads it as None, and a run without `loadgen` at all reads as all None). Each worker's
row stays a JSON object: local and Ray workers report different facts (`advisor.loadgen.workers`,
`advisor.loadgen.ray_workers`), and only the console and the report show them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.metrics.distribution import Distribution
from advisor.metrics.lag import LagCheck
from fileform import FileForm


@dataclass(frozen=True)
class LoadgenInfo(FileForm):
    lag_ms: Distribution | None = None  # send lag (t_send - t_sched) of every sent measured request
    lag_check: LagCheck | None = None  # open loop: the send-lag rule (advisor.metrics.lag)
    held: bool | None = None  # did the offered rate hold (advisor.metrics.lag.held); None: not judged
    wall_s: float | None = None
    interrupted: str | None = None  # "SIGINT after 40 of 100 requests"; None: ran to the end
    signal: str | None = None
    n_finished: int | None = None
    timeout_s: float | None = None
    event_loop: str | None = None  # advisor.loadgen.eventloop's name of the loop used
    json_codec: str | None = None  # adapters.json_codec's name of the JSON codec used (orjson or json)
    n_workers: int | None = None
    workers: list[dict[str, Any]] = field(default_factory=list)  # per load-generator worker
    t0_perf_counter_ns: int | None = None  # record times are relative to this (the system's monotonic clock)
    prepare_s: float | None = None

    @classmethod
    def upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        """An empty `lag_ms` or `lag_check` object (nothing sent) reads as None."""
        return {k: None if k in ("lag_ms", "lag_check") and v == {} else v for k, v in d.items()}
