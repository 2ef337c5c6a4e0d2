"""The product's version: pyproject's, plus the commit when it runs from a git checkout (issue 28)."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest

import advisor
import build_info

ROOT = Path(__file__).resolve().parents[2]


def test_the_distribution_name_is_not_the_registrys_other_advisor() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["name"] == build_info.DISTRIBUTION == "inference-advisor"
    assert (tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["advisor"]
            == "advisor_cli:main")  # the command keeps its name


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout")
def test_a_checkout_records_the_commit_it_runs() -> None:
    base = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert advisor.__version__ in (f"{base}+g{sha}", f"{base}+g{sha}.dirty")
    assert "unknown" not in advisor.__version__


def test_code_shipped_to_a_ray_worker_says_it_is_the_drivers_version() -> None:
    """`--ship-code` copies the packages without .git: the worker is told the driver's version, and reports it."""
    import os
    import sys

    env = {**os.environ, build_info.SHIPPED_VERSION_ENV: "9.9.9+gabc1234"}
    out = subprocess.run([sys.executable, "-c", "import advisor; print(advisor.__version__)"], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "9.9.9+gabc1234"


def test_the_entry_point_and_python_m_run_the_same_command() -> None:
    """The console script's target resolves, and `python -m advisor_cli` is the same `advisor` (the top floor)."""
    import importlib
    import sys

    module, _, name = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["advisor"].partition(":")
    assert callable(getattr(importlib.import_module(module), name))
    out = subprocess.run([sys.executable, "-m", "advisor_cli", "--version"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == f"advisor, version {advisor.__version__}"
