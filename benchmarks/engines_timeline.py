"""When was the machine slow? Every cell of a `benchmarks/engines.py` run on one clock (issue 12 part 4).

    python benchmarks/engines_timeline.py OUT_DIR [--users 1] [--parts 6]

A cell's decode tok/s is a median over its requests; a machine whose memory read speed moves in phases
(benchmarks/memory_drift.py) moves it with them. This reads each cell's `requests.parquet` (the chunk times the
client recorded) and prints the cells in the order they ran: the run's `created_utc`, then the cell cut into
`--parts` equal runs of requests, each part's median decode rate (tokens after the first / time from the first
chunk to the last, per request). A slow phase that starts in one cell and runs on into the next engine's cell is
the machine's, not an engine's. Prints one JSON document at the end as well.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def decode_rates(path: Path) -> list[float]:
    """Every measured request's decode tok/s, in send order."""
    import pandas as pd

    df = pd.read_parquet(path).sort_values("t_send_ns")
    df = df[~df["warmup"] & df["error_kind"].isna()]
    rates = []
    for times, tokens in zip(df["chunk_t_ns"], df["chunk_tokens"], strict=True):
        if len(times) > 1 and times[-1] > times[0]:
            rates.append((sum(tokens) - tokens[0]) / ((times[-1] - times[0]) / 1e9))
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", help="an engines.py --out-dir")
    ap.add_argument("--users", type=int, default=1, help="the cells of this user count")
    ap.add_argument("--parts", type=int, default=6)
    args = ap.parse_args()
    cells = sorted(Path(args.out_dir).glob(f"*-{args.users}-*/requests.parquet"))
    if not cells:
        sys.exit(f"engines_timeline.py: no {args.users}-user cells (*/requests.parquet) under {args.out_dir}")
    rows = []
    for path in cells:
        result = json.loads(path.with_name("result.json").read_text())
        rates = decode_rates(path)
        n = len(rates)
        parts = [statistics.median(rates[i * n // args.parts:(i + 1) * n // args.parts])
                 for i in range(args.parts) if (i + 1) * n // args.parts > i * n // args.parts]
        rows.append({"start_utc": result["created_utc"], "engine": result["engine"]["adapter"],
                     "cell": path.parent.name, "parts": parts})
    rows.sort(key=lambda r: r["start_utc"])
    for r in rows:
        print(f"{r['start_utc']}  {r['engine']:<12} " + " ".join(f"{p:6.1f}" for p in r["parts"]))
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
