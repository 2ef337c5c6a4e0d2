"""The one error of the sizing package: a user input it cannot size, in one line that says what to fix."""

from __future__ import annotations


class SizingError(ValueError):
    """One line that says what to fix (the CLI prints it and exits 2)."""
