"""The Azure traces ship as package data: byte-identical to the published CSVs, credited beside them."""

from __future__ import annotations

import gzip
import hashlib
import tomllib
from pathlib import Path

import pytest

from scenarios.trace_files import SHIPPED_TRACES, find_trace, read_trace

REPO = Path(__file__).resolve().parents[2]
SHA256 = {  # of the CSVs as published in Azure/AzurePublicDataset data/ (the files in shared/traces)
    "AzureLLMInferenceTrace_code.csv.gz": "54e9a6d2a4bd06ba1e060304b900abbc74cbea53de96506e60fe5bb4f2277fb6",
    "AzureLLMInferenceTrace_conv.csv.gz": "2f1e5b666d4e3055fdbba98598ce2ec307767b9064e03e2fa46676dbcc7d0bf8",
}


@pytest.mark.parametrize("name", sorted(SHA256))
def test_shipped_trace_is_the_published_csv(name: str) -> None:
    data = gzip.decompress((SHIPPED_TRACES / name).read_bytes())
    assert hashlib.sha256(data).hexdigest() == SHA256[name]
    shared = REPO.parent / "shared" / "traces" / name.removesuffix(".gz")
    if shared.is_file():  # the project's shared copy, where present, is the same file
        assert shared.read_bytes() == data


def test_shipped_traces_read_like_the_csv() -> None:
    code = read_trace(SHIPPED_TRACES / "AzureLLMInferenceTrace_code.csv.gz")
    conv = read_trace(SHIPPED_TRACES / "AzureLLMInferenceTrace_conv.csv.gz")
    assert (len(code), len(conv)) == (8819, 19366)
    assert code.format == conv.format == "azure"
    assert (code.n_in[0], code.n_out[0]) == (4808, 10)


def test_credit_is_beside_the_traces_and_in_the_readme() -> None:
    credit = "Azure LLM inference trace 2023, Microsoft, CC-BY 4.0"
    assert credit in (SHIPPED_TRACES / "README.md").read_text()
    assert credit in (REPO / "README.md").read_text()


def test_traces_and_their_credit_are_package_data() -> None:
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["scenarios"]
    shipped = {p.name for p in SHIPPED_TRACES.iterdir()}
    matched = {n for n in shipped if any(Path("traces", n).match(p) for p in patterns)}
    assert {"README.md", *SHA256} <= matched


def test_a_name_without_gz_finds_the_shipped_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADVISOR_TRACES", raising=False)
    assert find_trace("AzureLLMInferenceTrace_conv.csv", None) == SHIPPED_TRACES / "AzureLLMInferenceTrace_conv.csv.gz"
