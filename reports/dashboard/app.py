"""The advisor dashboard: `advisor dashboard` or `streamlit run app.py` (runs folder: $ADVISOR_RUNS, default ./runs).

Pages: runs (filter, select), compare (charts of the selection), recommend
(constraints as widgets, live ranking), run (start a bounded benchmark, then view
it); the sidebar downloads the HTML report of the selection. This module lays out
the sidebar and picks the page; the pages are in `pages.py`, the tables, ranking
and benchmark in `data.py`, the charts in `reports.figures`.
"""

from __future__ import annotations

import streamlit as st

from reports.dashboard import data as dash
from reports.dashboard.pages import PAGES, View


def main() -> None:
    """Render one rerun of the dashboard (Streamlit runs this top to bottom on every interaction)."""
    st.set_page_config(page_title="advisor", layout="wide")
    root = dash.runs_root()
    skipped: list[str] = []
    all_runs = dash.load_runs(root, skipped)
    by_id = {r.run_id: r for r in all_runs}
    labels = {r["id"]: r["run"] for r in dash.runs_table(all_runs)}
    if "selected" not in st.session_state:
        st.session_state.selected = [r.run_id for r in all_runs[:3]]
    if "pick" in st.session_state:  # the Runs page's picker changed: take it now, so the sidebar sees it this run
        st.session_state.selected = list(st.session_state.pick)
    st.session_state.selected = [rid for rid in st.session_state.selected if rid in by_id]
    selected = [by_id[rid] for rid in st.session_state.selected]

    page = st.sidebar.radio("Page", tuple(PAGES), key="page")
    st.sidebar.caption(f"runs folder: {root} ({len(all_runs)} runs)")
    for line in skipped:
        st.sidebar.warning(line, icon="⚠️")
    st.sidebar.download_button(f"Download report ({len(selected)} run{'' if len(selected) == 1 else 's'})",
                               data=lambda: dash.report_html(selected), file_name="advisor-report.html",
                               mime="text/html", disabled=not selected, key="download", on_click="ignore")
    PAGES[page](View(root, all_runs, by_id, labels, selected))


if __name__ == "__main__":  # `streamlit run .../reports/dashboard/app.py` (what `advisor dashboard` does)
    main()
