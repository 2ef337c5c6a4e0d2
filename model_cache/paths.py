"""Where models live: `$ADVISOR_HOME/models/<name>` (default `~/.cache/advisor/models/<name>`).

A `--model` value is either an existing folder or a name in that cache;
`resolve_model(None)` is the default model `tiny`, created on first use.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from model_cache.presets import PRESETS

DEFAULT_MODEL = "tiny"
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # what `advisor models create` takes as NAME
# Bump when the same preset and seed would write a different model (weights layout, tokenizer training):
# the auto-made default model is remade when the recipe it recorded differs.
RECIPE = 2  # 2: byte-level tokenizers carry all 256 byte tokens


def advisor_home() -> Path:
    """The advisor's cache root: $ADVISOR_HOME, else ~/.cache/advisor."""
    env = os.environ.get("ADVISOR_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "advisor"


def models_root() -> Path:
    return advisor_home() / "models"


def is_model_dir(path: Path) -> bool:
    return (path / "config.json").is_file()


def check_model_name(name: str) -> None:
    """ValueError unless `name` is a plain folder name `advisor models create` can make (a path: use --root)."""
    if MODEL_NAME.match(name):
        return
    there = _create_at(name)
    elsewhere = f"; to make it in another folder: `{there}`" if there else ""
    raise ValueError(f"model name '{name}' must be a plain folder name (letters, digits, '.', '_', '-'){elsewhere}")


def missing_model_hint(name_or_path: str | Path) -> str:
    """How to make the model that was asked for: an `advisor models create` command that accepts it, or what to pass."""
    if MODEL_NAME.match(str(name_or_path)):  # a plain name: make it in the cache
        preset = name_or_path if name_or_path in PRESETS else "tiny"  # `small-100m` is made from its own preset
        return f"create it with `advisor models create {name_or_path} --preset {preset}` or pass a model folder"
    there = _create_at(name_or_path)
    if there:
        return f"pass an existing Hugging Face model folder, or make a tiny test model there with `{there} --preset tiny`"
    return ("pass an existing Hugging Face model folder, or create a model under a plain name (letters, digits, "
            "'.', '_', '-'), e.g. `advisor models create my-model --preset tiny`")


def _create_at(path_text: str | Path) -> str | None:
    """`advisor models create NAME --root PARENT` that makes a model at this path (create takes a name), if any."""
    path = Path(path_text).expanduser()
    if not MODEL_NAME.match(path.name) or len(path.parts) < 2:
        return None
    return f"advisor models create {path.name} --root {shlex.quote(str(path.parent))}"


def recipe_of(folder: Path) -> int | None:
    """The recipe an advisor-made model records in config.json (None: older, or not made by advisor)."""
    try:
        return json.loads((folder / "config.json").read_text()).get("advisor", {}).get("recipe")
    except (OSError, ValueError, AttributeError):
        return None

