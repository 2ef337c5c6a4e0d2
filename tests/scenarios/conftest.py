"""Fixtures: the Azure traces shipped with the package (scenarios/traces/*.csv.gz)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.trace_files import SHIPPED_TRACES

AZURE_FILES = ("AzureLLMInferenceTrace_code.csv.gz", "AzureLLMInferenceTrace_conv.csv.gz")


@pytest.fixture
def azure_traces(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder with the shipped Azure traces; $ADVISOR_TRACES is unset so nothing else is found first."""
    monkeypatch.delenv("ADVISOR_TRACES", raising=False)
    assert all((SHIPPED_TRACES / f).is_file() for f in AZURE_FILES), f"package data missing in {SHIPPED_TRACES}"
    return SHIPPED_TRACES
