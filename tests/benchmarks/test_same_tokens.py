"""benchmarks/same_tokens.py: an option that must not change the tokens (overlap, on CPU fp32) reports all of them
equal in every run, alternated; a single value is refused in one line before any engine starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "benchmarks" / "same_tokens.py")


def test_overlap_keeps_every_token_and_the_runs_alternate():
    proc = subprocess.run([sys.executable, SCRIPT, "--model", "tiny", "--option", "overlap", "--values", "false,true",
                           "--prompts", "6", "--longest", "40", "--max-tokens", "8"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["overlap"] for r in rows] == [False, True, False, True]
    assert all(r["tokens_equal_to_first"] == 1.0 and r["steps"] > 0 for r in rows)


def test_one_value_is_refused_in_one_line():
    proc = subprocess.run([sys.executable, SCRIPT, "--option", "overlap", "--values", "true"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and proc.stderr.strip().splitlines()[-1].startswith("--values needs two")
