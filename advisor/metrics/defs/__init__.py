"""One module per per-request metric, each making one `Metric` named `METRIC`; `advisor.metrics.registry`
collects every module here. Adding a metric is adding a module (and its test and its docs/metrics.md entry)."""
