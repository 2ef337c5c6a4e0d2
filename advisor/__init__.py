"""advisor: which inference engine, on which hardware, at what cost, for your traffic."""

from __future__ import annotations

from build_info import __version__  # the distribution's version (pyproject.toml), read once

__all__ = ["__version__"]
