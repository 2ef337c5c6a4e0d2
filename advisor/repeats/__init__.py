"""Repeat groups: one cell run N times, read back as one option with intervals."""
