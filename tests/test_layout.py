"""The layout shows the design: `advisor/` holds packages only, and the tests mirror every source package.

A module dropped at `advisor/`'s top, or a source package with no test folder of the same path, fails here with
the path to fix (docs/map.md lists advisor's packages and says where a package's tests live).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = ("fileform", "build_info", "model_cache", "scenarios", "own_engine", "adapters", "advisor", "reports",
                "advisor_cli")


def _source_packages() -> list[Path]:
    """Every folder under a source root that holds a Python module (data folders hold none)."""
    out = set()
    for root in SOURCE_ROOTS:
        for f in (REPO / root).rglob("*.py"):
            if "__pycache__" not in f.parts:
                out.add(f.parent.relative_to(REPO))
    return sorted(out)


def test_advisor_holds_packages_only():
    modules = sorted(p.name for p in (REPO / "advisor").glob("*.py") if p.name != "__init__.py")
    assert not modules, f"modules at advisor/'s top: {modules}; put each in the package of its concern (docs/map.md)"


def test_every_source_package_has_its_test_folder():
    missing = [f"tests/{p}" for p in _source_packages() if not (REPO / "tests" / p).is_dir()]
    assert not missing, f"source packages without a test folder of the same path: {missing}"


def test_no_test_sits_beside_a_package_it_should_be_in():
    # tests/advisor/ and tests/own_engine/ mirror packages made only of sub-packages (advisor/) or rooms
    # (own_engine/): a test file at their top belongs in the folder of what it tests
    loose = sorted(str(p.relative_to(REPO)) for top in ("advisor",) for p in (REPO / "tests" / top).glob("test_*.py"))
    assert not loose, f"tests at tests/advisor/'s top: {loose}; move each to tests/advisor/<package>/"


def test_the_walk_sees_the_packages():
    found = {str(p) for p in _source_packages()}
    assert {"advisor/run", "advisor/saved", "own_engine/core", "adapters/formats", "reports/dashboard"} <= found
