"""A 1 GB request log is streamed in bounded memory: the fit's peak RSS stays under 500 MB.

The log is generated in tmp: gateway-style JSONL lines of about 520 bytes (usage, a session id, and
prompt text that is never read), ~1.9 million requests over ten hours. The fit runs in its own process,
which reports its own peak resident memory (VmHWM) when it exits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

TARGET_BYTES = 1_000_000_000
RSS_LIMIT_MB = 500
LINE = ('{"id":"req-%d","created":%.3f,"model":"m1","session_id":"s%d","messages":[{"role":"user","content":"%s"}],'
        '"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}\n')
# VmHWM (this process's own peak), not ru_maxrss: Linux carries the parent's peak into ru_maxrss across
# fork/vfork + exec, so under a big pytest process ru_maxrss reported the parent's 2 GB, not the fit's.
FIT = ("import atexit, re, sys\n"
       "atexit.register(lambda: sys.stderr.write('maxrss_kb=%s\\n' % "
       "re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)))\n"
       "from advisor_cli import main\n"
       "main()\n")


def _write_log(path: Path) -> int:
    rng = np.random.default_rng(0)
    text = "lorem ipsum dolor sit amet " * 14  # ~380 characters of "prompt"
    n = 0
    t = 1_700_000_000.0
    with open(path, "w", encoding="utf-8") as f:
        while f.tell() < TARGET_BYTES:
            gaps = rng.gamma(0.7, 1 / (50 * 0.7), size=10_000)
            a = np.maximum(1, rng.lognormal(6.5, 0.8, size=gaps.size)).astype(int)
            b = np.maximum(1, rng.lognormal(4.5, 0.6, size=gaps.size)).astype(int)
            lines = []
            for g, x, y in zip(gaps.tolist(), a.tolist(), b.tolist()):
                t += g
                lines.append(LINE % (n, t, n // 4, text, x, y, x + y))
                n += 1
            f.write("".join(lines))
    return n


def test_one_gigabyte_log_in_bounded_memory(tmp_path: Path) -> None:
    log = tmp_path / "gateway.jsonl"
    n = _write_log(log)
    assert log.stat().st_size >= TARGET_BYTES
    out = tmp_path / "big.yaml"
    res = subprocess.run([sys.executable, "-c", FIT, "scenarios", "fit", str(log), "-o", str(out), "--json"],
                         capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    rss_mb = int(res.stderr.rsplit("maxrss_kb=", 1)[1].split()[0]) / 1024
    print(f"1 GB log ({n:,} requests): peak RSS {rss_mb:.0f} MB")
    assert rss_mb < RSS_LIMIT_MB
    doc = json.loads(res.stdout)
    assert doc["n_requests"] == n
    assert doc["arrival"]["process"] in ("gamma", "profile")
    rate = next(r for r in doc["comparison"] if r["stat"] == "rate (req/s)")
    assert rate["log"] == pytest.approx(50, rel=0.05)
    assert doc["sessions"]["sessions"] == (n + 3) // 4
    assert "lorem" not in out.read_text()
