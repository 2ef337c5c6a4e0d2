"""The rag tests' model cache is a fresh folder: an index they build is cached there, never in the user's cache."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "advisor-home"))
    return tmp_path / "advisor-home"
