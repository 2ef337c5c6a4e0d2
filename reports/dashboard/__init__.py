"""The Streamlit dashboard over saved runs: `data.py` (tables, ranking, a bounded run), `pages.py`, `app.py`.

`advisor dashboard` starts `app.py` from the installed package; `streamlit run app.py` at the top of a
source checkout runs the same app.
"""
