"""The guard of a launched server: it starts the server and takes it down when advisor goes away.

Run as `python -m adapters.server_guard FD -- server argv...` by `ManagedServer`,
as the leader of a new process group that the server joins. FD is the read end
of a pipe whose write end only advisor holds. The kernel closes that end when
advisor exits for any reason, SIGKILL included, and the guard then reads end
of file and stops the whole group: SIGTERM, then SIGKILL after the grace
period. A pipe rather than PR_SET_PDEATHSIG: the death signal fires when the
*thread* that started the child ends (the dashboard starts runs from worker
threads), end of file only when the process is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

GRACE_S = 10.0


def _stop_group(grace_s: float) -> None:
    group = os.getpgid(0)
    os.killpg(group, signal.SIGTERM)  # the server and this guard; the guard ignores it (below)
    time.sleep(grace_s)
    os.killpg(group, signal.SIGKILL)


def main(argv: list[str]) -> int:
    fd = int(argv[0])
    assert argv[1] == "--", argv
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's SIGTERM is for the server; SIGKILL ends us
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    server = subprocess.Popen(argv[2:], stdin=subprocess.DEVNULL, restore_signals=True,
                              preexec_fn=lambda: (signal.signal(signal.SIGTERM, signal.SIG_DFL),
                                                  signal.signal(signal.SIGINT, signal.SIG_DFL)))
    print(f"advisor server guard: pid {os.getpid()}, server pid {server.pid}", file=sys.stderr, flush=True)

    def watch() -> None:
        while os.read(fd, 1):
            pass  # advisor never writes; any byte is ignored
        print("advisor server guard: advisor is gone, stopping the server", file=sys.stderr, flush=True)
        _stop_group(GRACE_S)

    threading.Thread(target=watch, daemon=True).start()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
