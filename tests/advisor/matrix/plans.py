"""Small plans for matrix tests: the `fake` engine with short runs, so a cell takes a few seconds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

FAST = {"scenario": "chat", "duration": 1.0, "warmup": 0.2, "max_output_tokens": 8, "max_input_tokens": 64,
        "engine": "fake", "options": {"ttft_ms": 5, "tpot_ms": 1}}


def write_plan(folder: Path, cells: list[dict[str, Any]], name: str = "t", **defaults: Any) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "defaults": {**FAST, **defaults}, "cells": cells}))
    return path
