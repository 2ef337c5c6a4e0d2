"""A model's folder from what a user typed: a path, or a name in the cache; no name at all is the default
model (`tiny`), made on first use. Its own module because it makes that model (`create`), which itself uses
`paths`."""

from __future__ import annotations

import sys
from pathlib import Path

from model_cache.create import create_model  # its torch import waits until a model must be made
from model_cache.paths import (
    DEFAULT_MODEL,
    MODEL_NAME,
    RECIPE,
    is_model_dir,
    missing_model_hint,
    models_root,
    recipe_of,
)


def resolve_model(name_or_path: str | Path | None, *, arg: str = "--model") -> Path:
    """An existing model folder for a path or cache name; None means `tiny`, created on first use.

    `arg` is how the command line names the value (`--model`, convert's `MODEL`), for the error messages.
    """
    if name_or_path is None or (str(name_or_path) == DEFAULT_MODEL and not Path(DEFAULT_MODEL).is_dir()):
        target = models_root() / DEFAULT_MODEL
        stale = is_model_dir(target) and recipe_of(target) != RECIPE
        if stale:
            print(f"advisor: the default model in {target} was made by another advisor version; remaking it",
                  file=sys.stderr)
        if stale or not is_model_dir(target):
            try:
                create_model(DEFAULT_MODEL, DEFAULT_MODEL, force=stale)
            except FileExistsError:  # another process made it between our check and create_model's
                if not is_model_dir(target):
                    raise
        return target
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if not is_model_dir(path):
            raise FileNotFoundError(f"{path} is a folder but has no config.json; point {arg} at a Hugging Face "
                                    "model folder or name a cached model (`advisor models list`)")
        return path.resolve()
    cached = models_root() / str(name_or_path)
    if is_model_dir(cached):
        return cached
    where = f"not a folder and not in {models_root()}" if MODEL_NAME.match(str(name_or_path)) else "no such folder"
    raise FileNotFoundError(f"no model '{name_or_path}': {where}; {missing_model_hint(name_or_path)}")
