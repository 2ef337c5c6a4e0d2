"""Imports point down only: fileform at the floor, then own_engine and scenarios, then adapters, then advisor, then reports, then the CLI.

Walks every module's imports (module level and inside functions) and fails on one that points up, so a
layer can be read, tested and replaced without the ones above it (docs/map.md draws the layers).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# advisor_cli is the top floor: the command line may import every layer and, being above them all, nothing
# may import it. No package is exempt.
LAYER = {"fileform": -1, "build_info": 0, "model_cache": 0, "scenarios": 0, "own_engine": 1, "adapters": 2, "advisor": 3, "reports": 4,
         "advisor_cli": 5}


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def _upward(package: str, path: Path, shown: str) -> list[str]:
    wrong = []
    for line, target in _imports(path):
        top = target.split(".")[0]
        if top in LAYER and top != package and LAYER[top] >= LAYER[package]:
            wrong.append(f"{shown}:{line} ({package}) imports {target} ({top}, a layer "
                         f"{'above' if LAYER[top] > LAYER[package] else 'beside'} it)")
    return wrong


def test_no_import_points_up_a_layer():
    wrong = []
    for package in LAYER:
        for path in sorted((REPO / package).rglob("*.py")):
            wrong += _upward(package, path, str(path.relative_to(REPO)))
    assert not wrong, "imports that point up:\n" + "\n".join(wrong)


def test_the_walk_refuses_an_import_of_the_command_line(tmp_path):
    source = tmp_path / "view.py"
    source.write_text("def f():\n    from advisor_cli.options import RUNS\n    import reports.html\n")
    assert _upward("reports", source, "reports/view.py") == [
        "reports/view.py:2 (reports) imports advisor_cli.options (advisor_cli, a layer above it)"]
    assert _upward("advisor_cli", source, "advisor_cli/view.py") == []  # the top floor may import every layer


def test_the_walk_sees_every_layer():
    for package in LAYER:
        assert list((REPO / package).rglob("*.py")), package  # a renamed package would make the test vacuous
