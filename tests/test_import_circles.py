"""No import circle between files: each file can be read knowing only the files it imports.

Walks every import of the project's packages (module level and inside functions, absolute and relative),
resolves it to a file, and fails on every strongly connected group of two or more files, printing one
circle through each. `from pkg import name` where `name` is a submodule counts as importing that
submodule; `import a.b` counts as importing `a/b.py` (the parent packages' `__init__.py` run too, but a
package's `__init__` importing its own modules is not a circle between the files a reader follows).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("own_engine", "scenarios", "adapters", "advisor", "reports", "advisor_cli")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _absolute(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    """The module an `ImportFrom` names, with a relative one (`from . import x`) made absolute."""
    if not node.level:
        return node.module or ""
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path, here: str, modules: dict[str, Path]) -> set[str]:
    """The project modules one file imports, each resolved to a module that has a file."""
    out: set[str] = set()

    def add(name: str) -> None:
        while name and name not in modules:  # `import a.b.c` where c is a name in a/b.py
            name = name.rpartition(".")[0]
        if name and name != here:
            out.add(name)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node, here, path.name == "__init__.py")
            if target.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:  # `from pkg import module`: the submodule is what is imported
                    add(sub)
                else:
                    add(target)
    return out


def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: imports(path, name, modules) for name, path in modules.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan), each as sorted module names."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: the graph has hundreds of files
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(found)


def one_circle(group: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest path from the group's first module back to itself, inside the group (what to print)."""
    members = set(group)
    start = group[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{group} is not a circle")


def test_no_import_circle_between_files():
    edges = graph()
    found = circles(edges)
    text = [f"{len(group)} files: {' -> '.join(one_circle(group, edges))} (all: {', '.join(group)})"
            for group in found]
    print("\n".join(text) or "no import circle")
    assert not found, "import circles:\n" + "\n".join(text)


def test_the_walk_finds_a_circle_and_resolves_submodules():
    edges = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "a.w": {"a.x"}, "b": {"b"}}
    assert circles(edges) == [["a.x", "a.y", "a.z"]]  # a.w only points in; a self-import is no circle
    assert one_circle(["a.x", "a.y", "a.z"], edges) == ["a.x", "a.y", "a.z", "a.x"]
    modules = _modules()
    walked = imports(REPO / "advisor_cli" / "__main__.py", "advisor_cli.__main__", modules)
    assert walked == {"advisor_cli"}  # `from advisor_cli import main`: main is a function, not a module
    edges = graph()
    assert len(edges) > 200 and all(edges[name] <= edges.keys() for name in edges)
    assert "advisor_cli.options" in edges["advisor_cli.bench"]  # `from advisor_cli.options import ...`
