"""Saved runs load back into the same objects; damaged folders give clear errors."""

from __future__ import annotations

import json

import pytest

from adapters.base import EngineInfo
from advisor.loadgen.records import RequestRecord
from advisor.metrics.registry import METRIC_BY_KEY
from advisor.metrics.summary import RunSummary
from advisor.metrics.verdict import Verdict
from advisor.run.schedule import RunSchedule
from advisor.saved.store import RunResult, StoreError, list_runs, load_run
from advisor.telemetry.record import TelemetrySummary
from scenarios.types import SLOs
from tests.advisor.recommend.h200 import H200_DIR


def _result(run_id: str = "r1") -> RunResult:
    return RunResult(run_id=run_id, created_utc="2026-11-21T00:00:00Z", scenario={"name": "copilot"},
                     schedule=RunSchedule("open"), slos=SLOs(ttft_ms=500.0), engine=EngineInfo("fake", "fake", "0", "cpu", "m", "server", "fp32"),
                     manifest={}, summary=RunSummary.from_dict({"mode": "open", "n_requests": 2, "ttft_ms": {"n": 0}}), telemetry=TelemetrySummary(), verdict=Verdict("VALID"))


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
    from advisor.run.bench import BenchConfig, bench_once
    from scenarios.overrides import Overrides

    ov = Overrides(rate_rps=20, duration_s=0.6, warmup_s=0.2, max_input_tokens=16, max_output_tokens=4)
    run = bench_once(BenchConfig("copilot", engine="fake", overrides=ov, out_dir=tmp_path / "a"))
    before = (run.path / "result.json").read_text()
    back = load_run(run.path)
    back.save(tmp_path / "b")
    assert (tmp_path / "b" / run.run_id / "result.json").read_text() == before
    # the JSON text itself: to_dict(from_dict(json)) == json, key order and float digits included
    assert json.dumps(RunResult.from_dict(json.loads(before)).to_dict(), indent=1, allow_nan=False) == before
    assert back.summary.ttft_ms.n > 0 and back.loadgen.lag_ms is not None  # the sections are typed, not dicts


def _pop_low_tails(d: object) -> int:
    """Take the low tail (p10, p5, p1: null, as those runs' files lack it) out of every distribution in `d`."""
    n = 0
    if isinstance(d, dict):
        if "p99_9" in d:
            assert [d.pop(p) for p in ("p10", "p5", "p1")] == [None] * 3
            n += 1
        n += sum(_pop_low_tails(v) for v in d.values())
    elif isinstance(d, list):
        n += sum(_pop_low_tails(v) for v in d)
    return n


def test_the_h200_runs_load_and_gain_only_the_later_tpot_keys():
    """Files written by an older advisor (tests/data): each loads, and writing it again adds the keys that
    came later (the (n_out - 1) TPOT, read from the old `tpot_ms`; each distribution's low tail p10, p5, p1, null;
    the lag check's `n_late_waited`, null: those runs have no wait figures), writes no distribution of a metric
    that did not exist then (time to second token: not recorded, not empty), drops the two copies of the offered rate that the summary's `offered_rps` now
    holds alone (advisor.run.rates), reads a goodput above throughput as the throughput (RunSummary.upgrade), and
    changes nothing else."""
    runs = sorted(H200_DIR.glob("*/result.json"))
    assert len(runs) == 3
    for f in runs:
        old = json.loads(f.read_text())
        run = load_run(f.parent)
        new = run.to_dict()
        assert run.engine.batching == "continuous" and run.verdict.status in ("VALID", "SATURATED")
        assert _pop_low_tails(new) >= len([k for k in METRIC_BY_KEY if k in old["summary"]])
        assert new["summary"].pop("tpot_n_minus_1_ms") == old["summary"]["tpot_ms"]
        assert new["summary"].pop("tpot_definition") == "n_out_minus_1"
        assert "ttst_ms" not in new["summary"] and run.summary.recorded("ttst_ms") is None  # not measured then
        for checked in (new["summary"]["lag_check"], new["loadgen"]["lag_check"]):
            if checked is not None:  # open-loop runs
                assert checked.pop("n_late_waited") is None
        assert old["schedule"].pop("offered_rps") == old["summary"]["offered_rps"]  # the same figure, twice
        s = old["summary"]  # goodput is at most throughput since 2026-11-27: the chat run's 5.55 reads as 5.18
        s["goodput_rps"] = min(s["goodput_rps"], s["requests_per_s"])
        old["schedule"]["effective"].pop("offered_rps")  # the arrival's target rate, now Settings.target_rps
        if set(new["summary"]) == set(old["summary"]):  # the distributions are written in the registry's order
            old["summary"] = {k: old["summary"][k] for k in new["summary"]}
        assert json.dumps(new, indent=1) == json.dumps(old, indent=1)  # the rest: same keys, order and values
        again = json.dumps(run.to_dict(), indent=1)
        assert json.dumps(RunResult.from_dict(json.loads(again)).to_dict(), indent=1) == again


def _damaged(d: dict, where: str, value: object) -> dict:
    *path, last = where.split(".")
    node = d
    for key in path:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is _DROP:
        del node[last]
    else:
        node[last] = value
    return d


_DROP = object()


@pytest.mark.parametrize(("where", "value", "said"), [
    ("summary.n_ok", "two hundred", "summary.n_ok is str ('two hundred'): input should be a valid integer"),
    ("summary.ttft_ms.p95", [1.0], "summary.ttft_ms.p95 is list ([1.0]): input should be a valid number"),
    ("summary.mode", "burst", "summary.mode is str ('burst'): input should be 'open', 'closed' or 'offline'"),
    ("engine.threads", "many", "engine.threads is str ('many'): input should be a valid integer"),
    ("engine.model", _DROP, "missing engine.model"),
    ("telemetry.gpu", [1], "telemetry.gpu is list ([1]): input should be a valid dictionary"),
    ("loadgen.lag_ms", {"mean": 1.0}, "missing loadgen.lag_ms.n"),
    ("verdict.reasons", 7, "verdict.reasons is int (7): input should be a valid tuple"),
    ("schedule", [], "schedule is list ([]): input should be an object"),
    ("created_utc", _DROP, "missing created_utc"),
])
def test_a_damaged_field_is_one_store_error_naming_it(tmp_path, where, value, said):
    d = _damaged(_result().to_dict(), where, value)
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps(d))
    with pytest.raises(StoreError) as e:
        load_run(folder)
    text = str(e.value)
    assert text.startswith(f"{folder}: {said}"), text  # the field, its value and why, in one line
    assert text.endswith("; the file is damaged, re-run the benchmark") and "\n" not in text


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


def test_the_parquet_columns_are_the_record_fields_typed_from_their_annotations():
    import dataclasses

    import pyarrow as pa

    from advisor.saved.store import _RECORD_SCHEMA

    assert _RECORD_SCHEMA.names == [f.name for f in dataclasses.fields(RequestRecord)]
    assert _RECORD_SCHEMA.field("chunk_t_ns").type == pa.list_(pa.int64())
    assert _RECORD_SCHEMA.field("chunk_tokens").type == pa.list_(pa.int32())  # declared int32 on the field
    assert _RECORD_SCHEMA.field("worker").type == pa.int32() and _RECORD_SCHEMA.field("n_out").type == pa.int64()
    assert _RECORD_SCHEMA.field("error").type == pa.string() and _RECORD_SCHEMA.field("warmup").type == pa.bool_()


@pytest.mark.parametrize("folder", sorted(p.parent for p in H200_DIR.glob("*/requests.parquet")),
                         ids=lambda p: p.name)
def test_every_saved_runs_records_read_write_and_read_back_the_same(folder, tmp_path):
    import pyarrow.parquet as pq

    from advisor.saved.store import RECORDS_FILE, read_records, write_records

    records = read_records(folder / RECORDS_FILE)
    write_records(tmp_path / RECORDS_FILE, records)
    assert read_records(tmp_path / RECORDS_FILE) == records
    old, new = pq.read_schema(folder / RECORDS_FILE), pq.read_schema(tmp_path / RECORDS_FILE)
    new_types = {f.name: f.type for f in new}
    assert all(new_types[f.name] == f.type for f in old)  # every old column, its type kept (newer ones added)
