"""Reports: the plotly figures shared with the dashboard (`figures`), the self-contained HTML
procurement report (`html`) and its `advisor report` command (`cli`).

Everything here renders saved runs and the recommender's output; no metric is computed here.
"""
