"""Fit a scenario from a team's own request logs: `advisor scenarios fit LOG... -o my-traffic.yaml`.

readers (JSONL / CSV / Mooncake rows) -> collect (streamed into bounded
state) -> arrival_fit, length_fit, session_fit -> writer (YAML with
comments) -> compare (log vs a schedule generated from the written
scenario) -> report / html. `fit.fit_logs(FitOptions(...))` runs it all.
Only timestamps, token counts, ids and prefix hashes are read from a log.
"""
