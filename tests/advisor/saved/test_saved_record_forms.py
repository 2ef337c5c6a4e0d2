"""Saved records whose JSON form follows from their fields (fileform): each section of a saved file reads back
and writes the same object, key order and values, for the shipped runs (tests/data) and for runs saved today."""

from __future__ import annotations

import json

import pytest

from advisor.run.schedule import RepeatTag, RunSchedule
from advisor.saved.store import RunResult, load_run
from fileform import FormError
from scenarios.overrides import Overrides
from scenarios.settings import Settings
from scenarios.types import SLOs
from tests.advisor.recommend.h200 import H200_DIR


def _text(d: object) -> str:
    return json.dumps(d, indent=1, allow_nan=False)


@pytest.mark.parametrize("folder", sorted(p.name for p in H200_DIR.glob("*/") if (p / "result.json").is_file()))
def test_the_shipped_runs_schedule_and_slos_write_back_as_saved(folder):
    old = json.loads((H200_DIR / folder / "result.json").read_text())
    run = load_run(H200_DIR / folder)
    assert _text(run.slos.to_dict()) == _text(old["slos"])
    schedule = old["schedule"]
    del schedule["offered_rps"], schedule["effective"]["offered_rps"]  # the older copies of the offered rate
    assert _text(run.schedule.to_dict()) == _text(schedule)
    assert _text(RunSchedule.from_dict(json.loads(_text(schedule))).to_dict()) == _text(schedule)
    assert SLOs.from_dict(old["slos"]) == run.slos == SLOs(ttft_ms=2000.0, tpot_ms=100.0)


@pytest.mark.parametrize(("scenario", "overrides", "tag"), [
    ("chat-closed", {"concurrency": 2, "duration_s": 0.4}, None),
    ("chat-multiturn", {"duration_s": 3, "full_scale": False}, None),  # sessions, an int override kept as given
    ("copilot", {"rate_rps": 20, "duration_s": 0.4, "seed": 3, "full_scale": True}, RepeatTag("g-1", 1, 3, True)),
])
def test_a_run_saved_today_reads_back_into_the_same_bytes(tmp_path, scenario, overrides, tag):
    from advisor.repeats.group import tag_run
    from advisor.run.bench import BenchConfig, bench_once

    ov = Overrides(warmup_s=0.1, max_input_tokens=16, max_output_tokens=4, **overrides)
    run = bench_once(BenchConfig(scenario, engine="fake", overrides=ov, out_dir=tmp_path))
    if tag is not None:
        run = tag_run(run, tag)
    text = (run.path / "result.json").read_text()
    back = RunResult.from_dict(json.loads(text))
    assert _text(back.to_dict()) == text
    assert back.slos == run.slos and back.schedule.repeat == tag
    assert back.schedule.overrides == ov and back.schedule.effective.mode == back.schedule.mode
    assert ("repeat" in json.loads(text)["schedule"]) == (tag is not None)  # no tag: no key


def test_older_schedule_shapes_read_as_today():
    """`effective` {} (settings not recorded yet) is None and is written back as {}; a repeat tag that names no
    group is none; a tag's missing keys take the defaults the tag always had."""
    s = RunSchedule.from_dict({"mode": "open", "effective": {}, "repeat": {"index": 2}, "offered_rps": 3.0})
    assert s.effective is None and s.repeat is None
    assert s.to_dict()["effective"] == {} and "repeat" not in s.to_dict()
    assert RunSchedule.from_dict({"mode": "open", "repeat": "x"}).repeat is None
    assert RunSchedule.from_dict({"mode": "open", "repeat": {"group_id": "g"}}).repeat == RepeatTag("g", 0, 1, False)
    assert RunSchedule.from_dict({"mode": "closed", "overrides": None}).overrides == Overrides()
    s = RunSchedule("open", effective=Settings(duration_s=2.0, notes=("compressed",)), overrides=Overrides(seed=4))
    assert RunSchedule.from_dict(json.loads(_text(s.to_dict()))) == s
    with pytest.raises(FormError, match="overrides is int"):
        RunSchedule.from_dict({"mode": "open", "overrides": 3})


def test_slos_a_missing_or_null_limit_is_unset_and_a_missing_percentile_95():
    assert SLOs.from_dict({"ttft_ms": 400.0}) == SLOs(ttft_ms=400.0)
    assert SLOs.from_dict({"ttft_ms": None, "tpot_ms": 50, "percentile": None}) == SLOs(tpot_ms=50.0)
    assert list(SLOs(e2e_ms=9.0).to_dict()) == ["ttft_ms", "tpot_ms", "e2e_ms", "percentile"]
    with pytest.raises(FormError, match="must be a finite number > 0"):
        SLOs.from_dict({"ttft_ms": -1})


# Every file advisor saved and reads back, of the last two shapes: tests/data/gpu_h200_2026_11_26 (written before
# the summary's later keys and the single offered rate) and tests/data/fake_saved_2026_11_28 (today's shape).
DATA = H200_DIR.parent
TODAY = DATA / "fake_saved_2026_11_28"
RESULTS = sorted(DATA.rglob("result.json"))
SWEEPS = sorted(DATA.rglob("sweep.json"))
MATRICES = sorted(DATA.rglob("matrix.json"))
RECORDS = sorted(DATA.rglob("requests.parquet"))


def _id(p) -> str:
    return f"{p.parent.parent.name}/{p.parent.name}"


def _point_today(p: dict | None) -> dict | None:
    """A sweep step's point as read today: `offered_rps` (the run's offered rate) is null where it was not saved."""
    return None if p is None else {**p, "offered_rps": p.get("offered_rps")}


def _drop_new_low_tails(new: object, old: object) -> None:
    """Every distribution now has its low tails (p10, p5, p1): null where the older file has none; checked, then
    taken out of `new`, wherever a distribution sits (the summary's, the load generator's lag)."""
    if isinstance(new, dict) and isinstance(old, dict):
        if "p50" in new:
            for tail in ("p10", "p5", "p1"):
                if tail not in old:
                    assert new.pop(tail) is None
        for key in new.keys() & old.keys():
            _drop_new_low_tails(new[key], old[key])


def _upgraded(new: dict, old: dict) -> tuple[dict, dict]:
    """An older result.json against today's writing of it, each less what RunResult's upgrades change (and
    tests/advisor/test_store.py names): the keys added are taken out of `new` after their values are checked
    (the (n_out - 1) TPOT, read from the old `tpot_ms`; no time to second token; the lag check's `n_late_waited`
    null), the keys dropped out of `old` (the two copies of the offered rate the summary holds alone), and a
    goodput above throughput is read as the throughput."""
    _drop_new_low_tails(new, old)
    s, o = new["summary"], old["summary"]
    tpot = s.pop("tpot_n_minus_1_ms")
    _drop_new_low_tails(tpot, o["tpot_ms"])
    assert tpot == o["tpot_ms"] and s.pop("tpot_definition") == "n_out_minus_1"
    assert "ttst_ms" not in s  # a metric the run predates is not written (it reads as not recorded)
    for lag in (s["lag_check"], new["loadgen"]["lag_check"]):
        if lag is not None:
            assert lag.pop("n_late_waited") is None
    assert old["schedule"].pop("offered_rps") == o["offered_rps"]
    old["schedule"]["effective"].pop("offered_rps")
    o["goodput_rps"] = min(o["goodput_rps"], o["requests_per_s"])
    return new, old


@pytest.mark.parametrize("path", RESULTS, ids=[_id(p) for p in RESULTS])
def test_every_saved_run_reads_back_into_its_bytes(path, tmp_path):
    """load -> to_dict -> JSON (indent 1, as the store writes it; keys in the writer's order, not sorted) is the
    file's text exactly for today's shape; an older file's is the file with its upgrades applied, and that
    text round-trips exactly. Saving the loaded run writes the same bytes."""
    text = path.read_text()
    run = load_run(path.parent)
    out = _text(run.to_dict())
    if TODAY in path.parents:
        assert out == text
    else:
        new, old = _upgraded(run.to_dict(), json.loads(text))
        assert new == old  # as objects: the summary writes its distributions in the metric registry's order
    assert _text(RunResult.from_dict(json.loads(out)).to_dict()) == out
    run.save(tmp_path)
    assert (tmp_path / run.run_id / "result.json").read_text() == out


@pytest.mark.parametrize("path", RECORDS, ids=[_id(p) for p in RECORDS])
def test_every_saved_runs_records_read_back_into_the_same_table(path, tmp_path):
    """requests.parquet: read -> write -> read gives the same records, and today's files the same Arrow table
    (columns, types, values; the Parquet bytes carry the writer's version, so they are not compared)."""
    import pyarrow.parquet as pq

    from advisor.saved.store import read_records, write_records

    records = read_records(path)
    write_records(tmp_path / "r.parquet", records)
    assert read_records(tmp_path / "r.parquet") == records
    if TODAY in path.parents:
        assert pq.read_table(tmp_path / "r.parquet").equals(pq.read_table(path))


@pytest.mark.parametrize("path", SWEEPS, ids=[_id(p) for p in SWEEPS])
def test_every_saved_sweep_reads_back_into_its_bytes(path):
    """sweep.json: load_sweep -> to_dict -> JSON (indent 1, the writer's key order) is the file's text for
    today's shape; an older file's points gain `offered_rps` null. Its `config` is checked in test_run_config."""
    from advisor.sweep.run import load_sweep

    text = path.read_text()
    out = _text(load_sweep(path.parent).to_dict())
    if TODAY in path.parents:
        assert out == text
    else:
        d = json.loads(text)
        for step in d["steps"]:
            step["point"] = _point_today(step["point"])
        d["capacity"]["at"] = _point_today(d["capacity"]["at"])
        d["capacity"]["first_failure"] = _point_today(d["capacity"]["first_failure"])
        assert out == _text(d)


@pytest.mark.parametrize("path", MATRICES, ids=[_id(p) for p in MATRICES])
def test_every_saved_matrix_reads_back_into_its_bytes(path):
    """matrix.json: load_matrix -> to_dict -> JSON (indent 1, the writer's key order) is the file's text but
    `updated_utc`, which each save sets afresh."""
    from advisor.matrix.store import load_matrix

    d = json.loads(path.read_text())
    again = load_matrix(path.parent.name, path.parent.parent).to_dict()
    assert again.pop("updated_utc") >= d.pop("updated_utc")
    assert _text(again) == _text(d)


def test_the_saved_files_cover_both_shapes():
    """The checks above run over the older shape and today's: results, records, sweeps and a matrix."""
    for files in (RESULTS, RECORDS, SWEEPS):
        assert {p.parents[1] for p in files} == {H200_DIR, TODAY}
    assert [p.parents[1] for p in MATRICES] == [TODAY]
