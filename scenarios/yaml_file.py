"""One strict YAML reader for every file advisor reads (scenarios, matrix plans, constraints, prices).

Every problem is one line that names the file (and the line where YAML says one): bytes that are not
UTF-8, malformed YAML, and duplicate keys, which plain YAML loaders take silently (the last one wins,
so `rate_rps: 2` then `rate_rps: 20` would run at 20 without a word).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class YamlFileError(ValueError):
    """A YAML file that cannot be read; the message names the file and, where known, the line."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with the same key twice."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {seen[key]}, again on line {line}); keep one",
                key_node.start_mark)
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def parse_yaml(text: str, where: str | Path) -> Any:
    """Parse YAML text read from `where` (for messages), duplicate keys refused."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"{where}, line {mark.line + 1}" if mark is not None else str(where)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise YamlFileError(f"{at}: malformed YAML ({problem}); fix it there") from None


def read_yaml(path: str | Path) -> Any:
    """Read and parse a YAML file: UTF-8, duplicate keys refused, every error naming the file."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise YamlFileError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise YamlFileError(f"{path}, line {line}: not UTF-8 text (byte 0x{raw[e.start]:02x}); save the file as "
                            "UTF-8") from None
    return parse_yaml(text, path)
