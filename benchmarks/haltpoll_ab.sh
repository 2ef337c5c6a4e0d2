#!/bin/bash
# An attribution experiment, not a setting advisor makes: does a KVM guest's idle policy decide what a served
# step's hand-off costs? Runs benchmarks/serving_overhead.py with the guest's idle polling (cpuidle-haltpoll's
# guest_halt_poll_ns) at this machine's value and at POLL_NS, alternated RUNS times, then restores the value.
#
#   sudo bash benchmarks/haltpoll_ab.sh                       # CPU tiny at 1 and 8 users, 3 runs each
#   sudo RUNS=1 POLL_NS=200000 bash benchmarks/haltpoll_ab.sh --concurrency 1   # (sudo drops variables set before it)
#
# Why: with guest_halt_poll_ns=0 an idle CPU halts at once, so each step's one write to the sleeping client is an
# inter-processor interrupt to a halted virtual CPU, a VM exit paid inside the engine's `sendall` (~40 us after
# a forward pass on the CI VM; `benchmarks/busy_poll.py --wake --stream-mb 0,4`). A guest that polls for a while
# before it halts sees the write and wakes without one. Needs root and /sys/module/haltpoll (a KVM guest with the
# cpuidle-haltpoll driver); elsewhere it says so and exits 2. Extra arguments go to serving_overhead.py. Each
# run's JSON stays in $OUT (default: a fresh folder under /tmp, named at the end).
set -u -o pipefail
cd "$(dirname "$0")/.."
KNOB=${HALTPOLL_KNOB:-/sys/module/haltpoll/parameters/guest_halt_poll_ns}  # another file: to try this script
RUNS=${RUNS:-3}
POLL_NS=${POLL_NS:-1000000}
PY=${PYTHON:-.venv/bin/python}
if [ ! -w "$KNOB" ]; then
    echo "haltpoll_ab.sh: $KNOB is missing or not writable (needs root on a KVM guest with cpuidle-haltpoll)" >&2
    exit 2
fi
GOVERNOR=$(cat /sys/devices/system/cpu/cpuidle/current_governor 2>/dev/null || echo none)
if [ "$GOVERNOR" != haltpoll ] && [ -z "${HALTPOLL_KNOB:-}" ]; then
    echo "haltpoll_ab.sh: the cpuidle governor is $GOVERNOR, not haltpoll: guest_halt_poll_ns would change nothing" >&2
    exit 2
fi
BEFORE=$(cat "$KNOB")
if [ "$BEFORE" = "$POLL_NS" ]; then
    echo "haltpoll_ab.sh: guest_halt_poll_ns is already $POLL_NS; set POLL_NS to another value to compare" >&2
    exit 2
fi
trap 'echo "$BEFORE" > "$KNOB"' EXIT
trap 'exit 130' INT TERM
ARGS=(--device cpu --model tiny --prompt-len 64 --output-len 64 --duration 8 --warmup 2 --core-twice)
if [ $# -gt 0 ]; then ARGS+=("$@"); else ARGS+=(--concurrency 1,8); fi
OUT=${OUT:-$(mktemp -d /tmp/haltpoll-ab.XXXXXX)}  # a fresh folder: the summary reads every run in it
mkdir -p "$OUT"
for i in $(seq "$RUNS"); do
    for ns in "$BEFORE" "$POLL_NS"; do
        { echo "$ns" > "$KNOB" && [ "$(cat "$KNOB")" = "$ns" ]; } || { echo "haltpoll_ab.sh: could not set $KNOB to $ns" >&2; exit 1; }
        echo "run $i, guest_halt_poll_ns=$ns ($(date -u +%H:%M:%S))" >&2
        "$PY" benchmarks/serving_overhead.py "${ARGS[@]}" > "$OUT/poll${ns}_run$i.json" || exit 1
    done
done
echo "$BEFORE" > "$KNOB"
echo "runs in $OUT" >&2
"$PY" - "$OUT" "$BEFORE" "$POLL_NS" <<'EOF'
import json, statistics, sys
from pathlib import Path
out, values = Path(sys.argv[1]), sys.argv[2:]
print("guest_halt_poll_ns  C  runs: ratio (served tok/s; hand-off ms)  ->  median ratio, median served tok/s")
for ns in values:
    by_c = {}
    for f in sorted(out.glob(f"poll{ns}_run*.json")):
        for r in json.loads(f.read_text())["rows"]:
            by_c.setdefault(r["concurrency"], []).append(
                (r["ratio"], r["served"]["output_tok_s"], r["served"]["step"]["handoff_ms"]))
    for c, xs in sorted(by_c.items()):
        runs = ", ".join(f"{a:.3f} ({b:,.0f}; {h:.3f})" for a, b, h in xs)
        print(f"{ns:>18}  {c}  {runs}  ->  {statistics.median(a for a, _, _ in xs):.3f}, "
              f"{statistics.median(b for _, b, _ in xs):,.0f}")
EOF
