"""Saved runs load back into the same objects; damaged folders give clear errors."""

from __future__ import annotations

import json

import pytest

from adapters.base import EngineInfo
from advisor.loadgen.records import RequestRecord
from advisor.metrics.summary import RunSummary
from advisor.metrics.verdict import Verdict
from advisor.run_schedule import RunSchedule
from advisor.store import RunResult, StoreError, list_runs, load_run
from advisor.telemetry.record import TelemetrySummary
from scenarios.types import SLOs


def _result(run_id: str = "r1") -> RunResult:
    return RunResult(run_id=run_id, created_utc="2026-11-21T00:00:00Z", scenario={"name": "copilot"},
                     schedule=RunSchedule("open"), slos=SLOs(ttft_ms=500.0), engine=EngineInfo("fake", "fake", "0", "cpu", "m", "server", "fp32"),
                     manifest={}, summary=RunSummary.from_saved({"n_requests": 2}, mode="open"), telemetry=TelemetrySummary(), verdict=Verdict("VALID"))


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


def test_a_saved_run_reads_back_and_writes_the_same_file(tmp_path):
    """The typed record is a lossless view of result.json: load and save give back the same bytes."""
    from advisor.bench import BenchConfig, bench_once
    from scenarios.overrides import Overrides

    ov = Overrides(rate_rps=20, duration_s=0.6, warmup_s=0.2, max_input_tokens=16, max_output_tokens=4)
    run = bench_once(BenchConfig("copilot", engine="fake", overrides=ov, out_dir=tmp_path / "a"))
    before = (run.path / "result.json").read_text()
    back = load_run(run.path)
    back.save(tmp_path / "b")
    assert (tmp_path / "b" / run.run_id / "result.json").read_text() == before


def test_a_run_written_before_the_later_fields_still_loads(tmp_path):
    """advisor.run/1 as first written: no cold start or placement, no lag check, token sources, sessions or loadgen."""
    old = _result().to_dict()
    for k in ("ready_s", "placement"):
        del old["engine"][k]
    for k in ("saturation_signals", "lag_check", "token_sources", "sessions"):
        del old["summary"][k]
    del old["loadgen"]
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps(old))
    run = load_run(folder)
    assert run.engine.ready_s is None and run.engine.placement == {}
    assert run.summary.lag_check is None and run.summary.sessions is None and run.loadgen.wall_s is None
    assert run.summary.ttft_ms.n == 0 and run.summary.ttft_ms.at(50) is None  # a hand-made summary left it out


def test_a_damaged_section_names_itself(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    bad_verdict = _result().to_dict()
    bad_verdict["verdict"]["status"] = "GREAT"
    bad_engine = _result().to_dict()
    del bad_engine["engine"]["model"]
    for d, text in ((bad_verdict, "verdict.status is str .'GREAT'.: input should be 'VALID', 'INVALID'"),
                    (bad_engine, "missing engine.model; the file is damaged")):
        (folder / "result.json").write_text(json.dumps(d))
        with pytest.raises(StoreError, match=text):
            load_run(folder)
