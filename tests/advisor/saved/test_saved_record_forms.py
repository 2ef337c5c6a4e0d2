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
