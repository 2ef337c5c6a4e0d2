"""The fitted scenario as YAML text with comments, and the atomic write of everything a fit produces.

The YAML is an ordinary scenario (the loader reads it, `bench` runs it):
each block carries a comment that says what was measured and why this
form was chosen; SLOs are written unset, with a comment, because a log
shows the traffic a team had, not the latency its users need. Files are
written to a temporary folder beside the target and moved into place only
after everything succeeded (the YAML last), so a failed fit leaves nothing
half-written.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SLO_COMMENT = ("SLOs are yours to set: a log shows the traffic you had, not the latency your users need, so none is "
               "guessed. Until you set them, runs report latencies and throughput but no SLO verdict or goodput.")


@dataclass
class Block:
    """One top-level key of the scenario with the comment lines above it."""

    key: str
    value: Any
    comment: str = ""


@dataclass
class ScenarioText:
    header: list[str]
    blocks: list[Block] = field(default_factory=list)

    def render(self) -> str:
        out = [f"# {line}" for h in self.header for line in _wrap(h)]
        for b in self.blocks:
            out += [f"# {line}" for line in _wrap(b.comment)] if b.comment and not isinstance(b.value, dict) else []
            out.append(_render(b))
        return "\n".join(out) + "\n"


def _wrap(text: str, width: int = 110) -> list[str]:
    return textwrap.wrap(clean(text), width=width) or [""]


def clean(text: str) -> str:
    """Text from file names or a log, safe on one YAML line or comment (no control characters)."""
    return re.sub(r"[\x00-\x1f\x7f]", "?", str(text))


def _render(b: Block) -> str:
    if isinstance(b.value, str) and b.key in ("description", "source"):
        body = "\n".join("  " + line for line in textwrap.wrap(clean(b.value), width=100))
        return f"{b.key}: >-\n{body}"
    if isinstance(b.value, dict):
        lines = [f"  # {line}" for line in _wrap(b.comment, 106)] if b.comment else []
        for k, v in b.value.items():  # one key a line; nested values in flow style ({dist: ..., mean: ...})
            inner = yaml.safe_dump({k: v}, default_flow_style=False if not isinstance(v, dict | list) else None,
                                   sort_keys=False, width=100, allow_unicode=True)
            lines += ["  " + line for line in inner.rstrip("\n").split("\n")]
        return f"{b.key}:\n" + "\n".join(lines)
    return yaml.safe_dump({b.key: b.value}, default_flow_style=False, sort_keys=False, width=100).rstrip("\n")


def scenario_name(out: Path, given: str | None) -> str:
    """A valid scenario name: --name, else the output file's stem in lower case with other characters as '-'."""
    if given is not None:
        return given
    stem = out.name.split(".")[0].lower()
    name = re.sub(r"[^a-z0-9_-]+", "-", stem).strip("-_")
    return name if name and name[0].isalnum() else "my-traffic"


@contextmanager
def staged(target_dir: Path) -> Iterator[Path]:
    """A temporary folder beside the outputs; removed on the way out, whatever happened."""
    target_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".advisor-fit-", dir=target_dir))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def publish(files: list[tuple[Path, Path]]) -> None:
    """Move staged files onto their targets (same file system: each move is atomic), in the order given."""
    for src, dst in files:
        os.replace(src, dst)
