"""Imports point down only: own_engine and scenarios, then adapters, then advisor, then reports; the CLI on top.

Walks every module's imports (module level and inside functions) and fails on one that points up, so a
layer can be read, tested and replaced without the ones above it (docs/map.md draws the layers).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYER = {"build_info": 0, "model_cache": 0, "scenarios": 0, "own_engine": 1, "adapters": 2, "advisor": 3, "reports": 4}
TOP = "advisor.cli"  # the command line is the entry point: it may import every layer; nothing imports it


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def _module(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def test_no_import_points_up_a_layer():
    wrong = []
    for package in LAYER:
        for path in sorted((REPO / package).rglob("*.py")):
            here = _module(path)
            if here == TOP or here.startswith(TOP + "."):
                continue
            for line, target in _imports(path):
                top = target.split(".")[0]
                if top not in LAYER:
                    continue
                if target == TOP or target.startswith(TOP + "."):
                    wrong.append(f"{path.relative_to(REPO)}:{line} imports the command line ({target})")
                elif top != package and LAYER[top] >= LAYER[package]:
                    wrong.append(f"{path.relative_to(REPO)}:{line} ({package}) imports {target} ({top}, a layer "
                                 f"{'above' if LAYER[top] > LAYER[package] else 'beside'} it)")
    assert not wrong, "imports that point up:\n" + "\n".join(wrong)


def test_the_walk_sees_every_layer():
    for package in LAYER:
        assert list((REPO / package).rglob("*.py")), package  # a renamed package would make the test vacuous
