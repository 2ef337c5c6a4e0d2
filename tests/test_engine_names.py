"""No engine name as a string literal outside adapters/: callers ask the registry and `Capabilities`.

An engine compared by name (`engine == "own"`, a list of engine names) goes stale when an adapter is
added or changes what it is; its declared capabilities (`adapters.capabilities(name)`) do not. The few
names other packages need are the constants in `adapters` (BUILTIN_ENGINE, ...).
"""

from __future__ import annotations

import ast
from pathlib import Path

import adapters

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("advisor", "advisor_cli", "reports", "scenarios", "own_engine")
# Calls whose string argument is a Python module or distribution, not an engine ("transformers" the package).
PACKAGE_CALLS = {"find_spec", "import_module", "version", "distribution", "import_optional"}
# Where a registered name is a word of another vocabulary (file: what it is there). Keep this short.
ALLOWED = {
    "advisor/run/manifest.py": "distribution names whose versions a run records (`_PACKAGES`)",
    "advisor/sizing/reserve.py": "the sizing profiles' names: keys of advisor/sizing/data/engines.yaml, declared once",
}


def _called(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def engine_literals(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every string literal equal to an engine name, less module names given to PACKAGE_CALLS."""
    tree = ast.parse(source)
    exempt = {id(a) for node in ast.walk(tree) if isinstance(node, ast.Call) and _called(node) in PACKAGE_CALLS
              for a in node.args}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
            and id(node) not in exempt]


def test_no_engine_name_is_a_string_outside_adapters():
    names = set(adapters.REGISTRY)
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            shown = str(path.relative_to(REPO))
            if shown in ALLOWED:
                continue
            found += [f"{shown}:{line} '{name}'" for line, name in engine_literals(path.read_text(), names)]
    assert not found, ("engine names compared or listed outside adapters/ (ask adapters.capabilities(name), or use "
                       "a constant from adapters):\n" + "\n".join(found))


def test_the_walk_finds_a_name_and_spares_a_package_lookup():
    source = ('import importlib.util\nif engine in ("own", "llama_cpp"):\n    pass\n'
              'ok = importlib.util.find_spec("transformers")\nhelp = "any engine: own, fake"\n')
    assert engine_literals(source, set(adapters.REGISTRY)) == [(2, "own"), (2, "llama_cpp")]


def test_the_allowed_files_exist_and_still_need_it():
    names = set(adapters.REGISTRY)
    for shown in ALLOWED:
        assert engine_literals((REPO / shown).read_text(), names), f"{shown} no longer needs its exemption"
