"""One benchmark run: its settings, plan, window and rates, signals, environment and console."""
