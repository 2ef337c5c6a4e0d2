"""own_engine's rooms (issue 28): the model cache and the version import no engine, and no own_engine or
model_cache file imports one that imports it back (the native loader imports none of its users)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("own_engine", "model_cache", "build_info")


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module `path` imports (module level and inside functions), leaving out `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text())
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for child in node.body for n in ast.walk(child)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}  # `from pkg import module`
    return out


def _graph() -> dict[str, set[str]]:
    files = {_module(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}
    return {m: {t for t in _imports(p) if t in files and t != m} for m, p in files.items()}


def test_no_file_imports_one_that_imports_it_back() -> None:
    graph, state, circles = _graph(), {}, []

    def visit(m: str, path: list[str]) -> None:
        state[m] = "open"
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                circles.append(" -> ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_native_loader_imports_none_of_its_users() -> None:
    assert not {t for t in _graph()["own_engine.kernels.native"] if t.startswith("own_engine")}


def test_the_model_never_asks_which_backend_it_has() -> None:
    assert not {t for t in _graph()["own_engine.model.llama"] if t.startswith("own_engine.kernels")}


def test_the_model_cache_and_the_version_import_no_engine() -> None:
    """What adapters and the CLI import to list, make or tokenize a model, and the product's version: no torch,
    no own_engine module but the bridge `own_engine.core.loop_queue` (and the packages around it)."""
    code = ("import sys, build_info, model_cache.create, model_cache.paths, model_cache.presets, model_cache.staging, "
            "model_cache.tokenizer, model_cache.tokenizer_spm, model_cache.config, own_engine.core.loop_queue; "
            "print(' '.join(sorted(m for m in sys.modules if m == 'torch' or m.startswith('own_engine'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["own_engine", "own_engine.core", "own_engine.core.loop_queue"]
