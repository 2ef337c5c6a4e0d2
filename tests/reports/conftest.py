"""Saved runs made once per test session with the fake engine (about 8 s), shared by report tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.saved.store import RunResult
from tests.reports.make_runs import make_runs


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    make_runs(root)
    return root


@pytest.fixture(scope="session")
def saved_runs(runs_root: Path) -> list[RunResult]:
    from advisor.saved.store import list_runs

    return list_runs(runs_root)
