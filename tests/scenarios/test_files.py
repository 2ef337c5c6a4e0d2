"""Trace and log files are read a bounded line at a time: one endless line is refused, not read whole (issue 40)."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from scenarios.errors import ScenarioError
from scenarios.files import MAX_LINE_BYTES, text_lines
from scenarios.trace_files import read_trace


def _one_endless_line(path: Path, n_bytes: int) -> Path:
    """A gzip of ~n_bytes of '1' and no newline: some KB on disk, one line of n_bytes read back."""
    block = b"1" * (1 << 20)
    with gzip.open(path, "wb", compresslevel=9) as f:
        for _ in range(n_bytes >> 20):
            f.write(block)
    return path


def test_a_small_gzip_of_one_endless_line_is_refused_at_that_line_without_reading_it_whole(tmp_path):
    f = _one_endless_line(tmp_path / "bomb.jsonl.gz", 4 * MAX_LINE_BYTES)
    assert f.stat().st_size < 1 << 20
    tracemalloc.start()
    with pytest.raises(ScenarioError, match=r"bomb.jsonl.gz, line 1: longer than 16 MiB") as e:
        read_trace(f)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert "\n" not in str(e.value) and peak < 2.5 * MAX_LINE_BYTES, peak


def test_scenarios_fit_refuses_it_in_one_line(tmp_path):
    from advisor_cli import cli

    f = _one_endless_line(tmp_path / "log.jsonl.gz", 2 * MAX_LINE_BYTES)
    res = CliRunner().invoke(cli, ["scenarios", "fit", str(f), "-o", str(tmp_path / "fit.yaml")])
    assert res.exit_code != 0 and "line 1: longer than 16 MiB" in (res.output + str(res.exception))
    assert not (tmp_path / "fit.yaml").exists()


def test_lines_up_to_the_limit_read_as_before(tmp_path):
    f = tmp_path / "t.csv"
    f.write_bytes(b"a,b\r\n" + b"x" * 1000 + b"\n\xef\xbb\xbflast")
    assert list(text_lines(f)) == [(1, "a,b"), (2, "x" * 1000), (3, "\ufefflast")]
