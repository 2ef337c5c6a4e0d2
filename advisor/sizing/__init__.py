"""Estimates for what was not measured: model architectures, memory fit and TP degree, step times from public
measured GPU operator tables (aiconfigurator, Apache-2.0), a serving model, a backtest."""
