"""Saved runs load back into the same objects; damaged folders give clear errors."""

from __future__ import annotations

import json

import pytest

from advisor.records import RequestRecord
from advisor.store import RunResult, StoreError, list_runs, load_run


def _result(run_id: str = "r1") -> RunResult:
    return RunResult(run_id=run_id, created_utc="2026-11-21T00:00:00Z", scenario={"name": "copilot"},
                     schedule={"mode": "open"}, slos={"ttft_ms": 500.0}, engine={"adapter": "fake"},
                     manifest={}, summary={"n_requests": 2}, telemetry={}, verdict={"status": "VALID", "reasons": []})


def test_round_trip_result_and_records(tmp_path):
    recs = [RequestRecord(idx=0, request_id="a", t_sched_ns=0, t_send_ns=10, chunk_t_ns=[20, 30],
                          chunk_tokens=[1, 3], n_in=4, n_in_client=4, n_out=4, max_tokens=4),
            RequestRecord(idx=1, request_id="b", t_sched_ns=5, error_kind="cancelled", error="never sent",
                          warmup=True)]
    folder = _result().save(tmp_path, recs)
    back = load_run(folder)
    assert back.to_dict() == _result().to_dict()
    assert [r.to_dict() for r in back.records()] == [r.to_dict() for r in recs]
    assert load_run("r1", tmp_path).run_id == "r1"  # by id under the root
    assert [r.run_id for r in list_runs(tmp_path)] == ["r1"]


def test_missing_and_damaged_runs_say_what_to_do(tmp_path):
    with pytest.raises(StoreError, match="no run at"):
        load_run(tmp_path / "nope")
    folder = _result().save(tmp_path, [])
    (folder / "result.json").write_text("{not json")
    with pytest.raises(StoreError, match="not valid JSON"):
        load_run(folder)
    (folder / "result.json").write_text(json.dumps({"schema": "other"}))
    with pytest.raises(StoreError, match="not an advisor run"):
        load_run(folder)
