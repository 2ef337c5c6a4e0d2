"""How steady is this machine's memory read speed over seconds? (issue 12 part 4: the slow batch-1 cells)

    python benchmarks/memory_drift.py --processes 4 --seconds 12

Batch-1 decode reads every weight once per token, so its speed is this machine's memory read speed. This
script measures that speed alone, with no engine: each of --processes fresh processes (one after another)
allocates --mb of fp32 and, for --seconds, sums the whole tensor over and over on --threads threads; each
second it records the median time of one pass in that second, as GB/s. A machine whose read speed is steady
shows one level in every second of every process; phases of several seconds at a lower level, in some
processes and not others, are the machine's, not an engine's. With --file each second is split between that
buffer and the same bytes as a file's pages in the page cache, mapped read-only (pages that live on across
processes): if both slow down in the same seconds, a slow phase is the machine's, not a matter of which memory a
process got. Prints one line per process and one JSON document (every second's figure; the fastest and slowest
over all processes, and their ratio).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ONE = """
import json, mmap, os, statistics, time, torch
torch.set_num_threads({threads})
x = torch.ones({floats})
bufs = [x]
if {file!r}:  # the same bytes as a file's pages in the page cache, mapped read-only: read in turns with x
    m = mmap.mmap(os.open({file!r}, os.O_RDONLY), {bytes}, prot=mmap.PROT_READ)
    bufs.append(torch.frombuffer(memoryview(m).cast("B"), dtype=torch.uint8).view(torch.float32))
for b in bufs:
    b.sum()
out = []
for _ in range({seconds}):
    second = []
    for b in bufs:
        t0, passes = time.perf_counter(), []
        while time.perf_counter() - t0 < 1.0 / len(bufs):
            a = time.perf_counter(); b.sum(); passes.append(time.perf_counter() - a)
        second.append({bytes} / statistics.median(passes) / 1e9)
    out.append(second if len(bufs) > 1 else second[0])
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mb", type=int, default=352, help="bytes read per pass (small-100m's weights: 351 MB)")
    ap.add_argument("--file", nargs="?", const="", default=None, metavar="PATH",
                    help="also read --mb of a file's page-cache pages, in turns with the anonymous buffer each second "
                         "(half a second each): a new file written just before (no PATH) or an existing one (PATH, "
                         "e.g. a model's weights, pages that have lived in the page cache for a while)")
    args = ap.parse_args()
    floats = args.mb * 1_000_000 // 4
    if args.file and (not Path(args.file).is_file() or Path(args.file).stat().st_size < floats * 4):
        sys.exit(f"memory_drift.py: --file {args.file} is not a file of at least --mb {args.mb} MB")
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or ""
        if args.file == "":
            path = str(Path(tmp) / "pages")
            Path(path).write_bytes(b"\0" * (floats * 4))  # now in the page cache
        elif args.file:
            Path(path).read_bytes()  # in the page cache before the first process
        code = ONE.format(threads=args.threads, floats=floats, seconds=args.seconds, bytes=floats * 4, file=path)
        runs = []
        for i in range(args.processes):
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            gbs = json.loads(out.stdout)
            runs.append(gbs)
            fmt = (lambda g: f"{g[0]:.0f}/{g[1]:.0f}") if args.file is not None else (lambda g: f"{g:.0f}")
            print(f"process {i}: " + " ".join(fmt(g) for g in gbs) + (" GB/s (anonymous/file)" if args.file is not None else " GB/s"),
                  flush=True)
    flat = [v for r in runs for g in r for v in (g if args.file is not None else [g])]
    print(json.dumps({"threads": args.threads, "mb": args.mb, "seconds": args.seconds, "file": args.file, "gb_s": runs,
                      "fastest_s": max(flat), "slowest_s": min(flat), "median_s": statistics.median(flat),
                      "fastest_over_slowest": max(flat) / min(flat)}, indent=1))


if __name__ == "__main__":
    main()
