"""What a kernel receive stamp costs per socket read: the client's CPU per read, loop stamps against kernel stamps.

`benchmarks/loadgen.py` measures whole requests against nginx, which sends each answer in one write, so a
request is one or two reads there and the per-read cost hides. Here a writer process sends `--reads` small
SSE events on one loopback connection, each on its own after a short spin (so each is its own packet), and
the client reads them through `adapters.http_stream`'s transports on uvloop (asyncio's loop without it):
the loop's (`data_received`, stamped with perf_counter_ns) and the kernel-stamped one (`recvmsg` from
`add_reader`). The figure is the client process's CPU time (user and system: the kernel's receive work
done in its context counts) per event sent, in alternating rounds, with how many reads the events took
(a busy client reads several at once). One JSON line per round, then the medians, then the user-space cost
alone: `recv` against `recvmsg_into` with the stamp's decoding and conversion, on events already queued
(`tight_us_per_read`, no wake-ups in it):

    taskset -c 0 python benchmarks/arrival_stamps.py --events 20000 --gap-us 200 --rounds 4 --writer-cpu 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters import http_stream  # noqa: E402
from adapters.kernel_stamps import kernel_stamps_work  # noqa: E402

WRITER = """
import socket, sys, time
n, gap_ns = int(sys.argv[1]), int(sys.argv[2])
srv = socket.create_server(("127.0.0.1", 0))
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
conn.recv(65536)
event = b'data: {"choices": [{"index": 0, "text": " tok"}]}\\n\\n'
conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Type: text/event-stream\\r\\nContent-Length: %d\\r\\n\\r\\n" % (n * len(event)))
for _ in range(n):
    conn.sendall(event)
    t = time.perf_counter_ns() + gap_ns
    while time.perf_counter_ns() < t:
        pass
conn.recv(1)
"""


def one_round(kernel: bool, n: int, gap_us: float, cpu: str | None) -> dict[str, object]:
    cmd = [sys.executable, "-c", WRITER, str(n), str(int(gap_us * 1000))]
    if cpu is not None:
        cmd = ["taskset", "-c", cpu, *cmd]
    writer = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    port = int(writer.stdout.readline())

    async def go() -> tuple[float, int]:
        pool = http_stream.Pool(f"http://127.0.0.1:{port}", kernel_stamps=kernel)
        assert pool.arrival_clock == ("kernel" if kernel else "loop")
        c0 = time.process_time()
        resp, _ = await pool.send(pool.head("POST", "/v1/completions", {}, 2) + b"{}")
        cpu_s = time.process_time() - c0
        pool.close()
        return cpu_s, len(resp.reads)

    try:
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        cpu_s, reads = runner.run(go())
    writer.wait(timeout=30)
    return {"clock": "kernel" if kernel else "loop", "events": n, "reads": reads,
            "cpu_us_per_event": round(cpu_s / n * 1e6, 3)}


def tight_loop(n: int) -> dict[str, float]:
    """us per read of the two read paths on n events already queued on a loopback connection (no event loop)."""
    import socket

    from adapters.kernel_stamps import _CMSG_SPACE, _option, offset

    opt = _option()
    assert opt is not None
    kind, layout = opt
    clock = offset()
    event = b'data: {"choices": [{"index": 0, "text": " tok"}]}\n\n'
    out: dict[str, list[float]] = {"loop": [], "kernel": []}
    with socket.create_server(("127.0.0.1", 0)) as srv, socket.create_connection(srv.getsockname()) as cli:
        cli.setsockopt(socket.SOL_SOCKET, kind, 1)
        cli.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        peer, _ = srv.accept()
        buf = bytearray(262144)
        view = memoryview(buf)
        with peer:
            for _ in range(3):
                for path in ("loop", "kernel"):
                    for _ in range(n):
                        peer.sendall(event)
                    c0 = time.process_time()
                    for _ in range(n):
                        if path == "loop":
                            cli.recv(len(event))
                            time.perf_counter_ns()
                            continue
                        got, anc, _, _ = cli.recvmsg_into((memoryview(buf)[:len(event)],), _CMSG_SPACE)
                        bytes(view[:got])
                        now = time.perf_counter_ns()
                        for level, k, stamp in anc:
                            if k == kind and level == socket.SOL_SOCKET:
                                sec, nsec = layout.unpack_from(stamp)
                                clock.to_perf(sec * 1_000_000_000 + nsec, now)
                    out[path].append((time.process_time() - c0) / n * 1e6)
    return {k: round(statistics.median(v), 3) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=20000, help="events the writer sends per round")
    ap.add_argument("--gap-us", type=float, default=200.0, help="the writer's spin between two events")
    ap.add_argument("--rounds", type=int, default=4, help="rounds per clock, alternating")
    ap.add_argument("--writer-cpu", default=None, help="pin the writer to these CPUs (taskset -c)")
    args = ap.parse_args()
    if not kernel_stamps_work():
        raise SystemExit("no kernel receive stamps on this machine: nothing to compare")
    rows: dict[str, list[float]] = {"loop": [], "kernel": []}
    for _ in range(args.rounds):
        for kernel in (False, True):
            row = one_round(kernel, args.events, args.gap_us, args.writer_cpu)
            rows[str(row["clock"])].append(float(row["cpu_us_per_event"]))  # type: ignore[arg-type]
            print(json.dumps(row), flush=True)
    loop, kern = statistics.median(rows["loop"]), statistics.median(rows["kernel"])
    print(json.dumps({"median_cpu_us_per_event": {"loop": loop, "kernel": kern},
                      "kernel_extra_us_per_event": round(kern - loop, 3),
                      "tight_us_per_read": tight_loop(min(args.events, 20000))}))


if __name__ == "__main__":
    main()
