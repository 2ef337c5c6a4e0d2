"""What the load generator says about its own run: result.json's `loadgen` object, typed.

Written once by `advisor.bench`; `to_dict`/`from_dict` are its file form (a run written before a
key existed reads it as None, and a run without `loadgen` at all reads as all None). Each worker's
row stays a JSON object: local and Ray workers report different facts (`advisor.loadgen.workers`,
`advisor.loadgen.ray_workers`), and only the console and the report show them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from advisor.metrics.distribution import Distribution
from advisor.metrics.lag import LagCheck


@dataclass(frozen=True)
class LoadgenInfo:
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

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["lag_ms"] = self.lag_ms.to_dict() if self.lag_ms is not None else None
        out["lag_check"] = self.lag_check.to_dict() if self.lag_check is not None else None
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LoadgenInfo:
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["lag_ms"] = Distribution.from_dict(d["lag_ms"]) if d.get("lag_ms") else None
        kw["lag_check"] = LagCheck.from_dict(d["lag_check"]) if d.get("lag_check") else None
        kw["workers"] = [dict(w) for w in d.get("workers") or []]
        return cls(**kw)
