"""The model cache's tests share own_engine's session-wide tiny model."""

from tests.own_engine.conftest import tiny_path  # noqa: F401
