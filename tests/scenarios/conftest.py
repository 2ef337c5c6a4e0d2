"""Fixtures: where the shared Azure traces are ($ADVISOR_TRACES or <repo>/../shared/traces)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scenarios.traces import TRACES_ENV

REPO = Path(__file__).resolve().parents[2]
AZURE_FILES = ("AzureLLMInferenceTrace_code.csv", "AzureLLMInferenceTrace_conv.csv")


def _traces_dir() -> Path | None:
    for d in [*os.environ.get(TRACES_ENV, "").split(os.pathsep), str(REPO.parent / "shared" / "traces")]:
        if d and all((Path(d) / f).is_file() for f in AZURE_FILES):
            return Path(d)
    return None


@pytest.fixture
def azure_traces(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder with the Azure traces, also set as $ADVISOR_TRACES; skips when the traces are absent."""
    d = _traces_dir()
    if d is None:
        pytest.skip(f"Azure traces not found: set {TRACES_ENV} or put them in {REPO.parent / 'shared' / 'traces'}")
    monkeypatch.setenv(TRACES_ENV, str(d))
    return d
