"""A conversion killed at any moment leaves a usable cache: real child processes killed with SIGKILL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from adapters.formats import convert, read_manifest

ROOT = Path(__file__).resolve().parents[3]

# A conversion in a child process, with a stand-in engine writer (writes b"new"); it SIGKILLs itself while writing
# ("writing"), just before the new folder would be renamed onto the target ("swapping"), or waits for its stdin to
# close while writing ("waiting").
CHILD = """
import os, signal, sys
from pathlib import Path
import adapters.formats as conv

model, when = Path(sys.argv[1]), sys.argv[2]

def write(model_path, fmt, precision, tmp):
    (tmp / "weights.bin").write_bytes(b"new")
    if when == "writing":
        os.kill(os.getpid(), signal.SIGKILL)
    if when == "waiting":
        print("writing", flush=True)
        sys.stdin.read()

conv._write = write
real_rename = os.rename

def rename(src, dst):
    if when == "swapping" and Path(dst).name == "onnx-fp32":
        os.kill(os.getpid(), signal.SIGKILL)
    real_rename(src, dst)

os.rename = rename
conv.convert(model, "onnx", "fp32", force=True, check=False)
"""


def _child(model: Path, when: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(model), when], cwd=ROOT, env=env, **kw)


def _hidden(model: Path) -> list[str]:
    return sorted(p.name for p in (model / "converted").iterdir() if p.name.startswith("."))


def test_a_conversion_killed_while_writing_leaves_nothing_after_the_next(model_copy, fake_format):
    # was: the hidden temporary folder of a SIGKILLed conversion stayed in converted/ for ever
    assert _child(model_copy, "writing").wait() == -9
    assert len(_hidden(model_copy)) == 1  # what the killed one left
    out = convert(model_copy, "onnx", "fp32", check=False)
    assert _hidden(model_copy) == [] and (out / "weights.bin").read_bytes() == b"x"


def test_a_kill_between_old_out_and_new_in_loses_no_conversion(model_copy, fake_format):
    # was: the old folder was deleted before the new one was renamed in, so a kill there left neither in place
    out = convert(model_copy, "onnx", "fp32", check=False)
    assert _child(model_copy, "swapping").wait() == -9
    assert not out.exists()  # killed between the two renames
    aside = {(p / "weights.bin").read_bytes() for p in (model_copy / "converted").iterdir()
             if read_manifest(p) is not None}
    assert aside == {b"x", b"new"}  # the old conversion is set aside, not deleted, and the new one is complete
    writes = fake_format["writes"]
    assert convert(model_copy, "onnx", "fp32", check=False) == out
    assert fake_format["writes"] == writes  # restored, not reconverted
    assert (out / "weights.bin").read_bytes() == b"new" and _hidden(model_copy) == []


def test_the_folder_of_a_running_conversion_is_kept(model_copy, fake_format):
    convert(model_copy, "onnx", "fp32", check=False)
    child = _child(model_copy, "waiting", stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "writing\n"
        theirs = _hidden(model_copy)
        assert len(theirs) == 1
        convert(model_copy, "onnx", "fp32", force=True, check=False)  # sweeps before converting
        assert _hidden(model_copy) == theirs
    finally:
        child.stdin.close()
        rc = child.wait(timeout=60)
    assert rc == 0 and (model_copy / "converted" / "onnx-fp32" / "weights.bin").read_bytes() == b"new"
    assert _hidden(model_copy) == []


def test_only_leftovers_of_dead_owners_on_this_host_are_removed(tmp_path):
    from model_cache import staging

    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    for owner in (f"{dead.pid}@elsewhere", f"{os.getpid()}@{staging._host()}", f"{dead.pid}@{staging._host()}"):
        (tmp_path / f".onnx-fp32.new.{owner}.abcd1234").mkdir()
    (tmp_path / ".onnx-fp32-abcd1234").mkdir()  # an older advisor's: no owner to ask, left alone
    assert staging.sweep(tmp_path, lambda folder: False) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".onnx-fp32-abcd1234", f".onnx-fp32.new.{dead.pid}@elsewhere.abcd1234",
         f".onnx-fp32.new.{os.getpid()}@{staging._host()}.abcd1234"])
