"""benchmarks/graph_inputs.py: the CUDA-graph inputs built now equal the old builder's, padding rows and all (the
script refuses to time builders that disagree), for a batch that fills its bucket and one that does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_two_builders_agree_and_the_script_reports_both():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "graph_inputs.py"), "--batch-sizes", "3,8",
                           "--context", "40", "--repeats", "3", "--rounds", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout.strip().splitlines()[-1])["rows"]
    assert [r["batch"] for r in rows] == [3, 8] and rows[0]["bucket"] == [4, 4]
    assert all(r["before_us"] > 0 and r["now_us"] > 0 for r in rows)
