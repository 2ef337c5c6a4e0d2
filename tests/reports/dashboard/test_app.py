"""The dashboard's pages, driven with Streamlit's AppTest (no browser)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tests.reports.make_runs import EVIL, EVIL_RUN_ID  # noqa: E402

APP = str(Path(__file__).resolve().parents[3] / "app.py")


@pytest.fixture
def app(runs_root: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("ADVISOR_RUNS", str(runs_root))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def _goto(at: AppTest, page: str) -> AppTest:
    at.sidebar.radio(key="page").set_value(page).run()
    assert not at.exception, at.exception
    return at


def _texts(at: AppTest) -> str:
    parts = [str(t.value) for t in at.table] + [w.value for w in at.warning] + [s.value for s in at.success]
    return "\n".join(parts)


def test_runs_page_lists_runs_and_filters_them(app: AppTest, saved_runs):
    assert "Runs" in app.header[0].value
    assert len(app.table[0].value) == len(saved_runs)
    app.multiselect(key="f_verdict").set_value(["VALID"]).run()
    shown = app.table[0].value
    assert len(shown) == sum(1 for r in saved_runs if r.verdict.status == "VALID")
    assert set(shown["verdict"]) == {"VALID"}


def test_hostile_names_are_shown_as_text(app: AppTest):
    app.multiselect(key="pick").set_value([EVIL_RUN_ID]).run()
    assert EVIL in _texts(app)  # the raw characters, in a table cell and the INVALID warning, not markup
    assert not any(EVIL in m.value for m in app.markdown)  # never in markdown, which could take HTML


def test_selection_carries_to_compare_with_every_chart(app: AppTest, saved_runs):
    ids = [r.run_id for r in saved_runs[:2]]
    app.multiselect(key="pick").set_value(ids).run()
    _goto(app, "Compare")
    assert len(app.table[0].value) == 2
    charts = app.get("plotly_chart")
    assert len(charts) == 6


def test_recommend_ranking_follows_the_constraints(app: AppTest):
    _goto(app, "Recommend")
    assert app.success, "a VALID run meets its scenario's SLOs: something is recommended"
    app.number_input(key="r_ttft").set_value(0.001).run()  # nothing can meet this
    assert not app.success
    assert any("No recommendation" in w.value for w in app.warning)
    assert all("fails" in r for r in app.table[0].value["result"])


def test_run_page_benchmarks_and_shows_the_new_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    runs_root = tmp_path / "runs"
    monkeypatch.setenv("ADVISOR_RUNS", str(runs_root))
    app = AppTest.from_file(APP, default_timeout=60)
    app.run()
    assert "No saved runs" in app.info[0].value
    before = 0
    _goto(app, "Run")
    app.selectbox(key="b_scenario").set_value("chat")
    app.number_input(key="b_rate").set_value(10.0)
    app.number_input(key="b_duration").set_value(1.0)
    app.number_input(key="b_max_out").set_value(4)
    app.button[0].click().run()  # the form's Start button
    assert not app.exception, app.exception
    assert len(list(runs_root.glob("*/result.json"))) == before + 1
    assert "Last run" in [s.value for s in app.subheader]
    assert "chat" in str(app.table[0].value["scenario"].tolist())


def test_download_button_follows_the_selection_at_once(app: AppTest, saved_runs):
    app.multiselect(key="pick").set_value([saved_runs[0].run_id]).run()
    assert app.sidebar.get("download_button")[0].proto.label == "Download report (1 run)"


def test_quality_page_shows_drift_and_samples(runs_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from advisor.quality.verify import VariantResult, VerifyReport

    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("ADVISOR_RUNS", str(root))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    _goto(at, "Quality")
    assert "advisor verify" in at.info[0].value  # no quality.json yet: says how to make one
    r = VariantResult("llama_cpp", "llama.cpp", "gguf", "q4_0", "quality drift", 8, 0.5, 2,
                      quality={"top1_agreement": 0.83, "kl": 0.12, "perplexity": 8.4}, sample=" who liked fish")
    (root / "quality.json").write_text(VerifyReport("/m", 8, ((1,),), (r,), "trained: x", 383).to_json())
    at.run()
    table = at.table[0].value
    assert list(table["sample"]) == [" who liked fish"] and list(table["top-1 on text"]) == ["0.83"]
