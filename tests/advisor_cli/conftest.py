"""Fixtures the command-line tests share with own_engine's (a tiny model folder)."""

from tests.own_engine.conftest import tiny_path  # noqa: F401
