"""advisor: which inference engine, on which hardware, at what cost, for your traffic."""

from __future__ import annotations

__version__ = "0.1.0"
