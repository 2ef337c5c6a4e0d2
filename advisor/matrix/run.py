"""Run a matrix: check every cell where it will run, then run them here or on Ray, and keep the matrix file.

Nothing runs and no matrix folder is made until the whole plan has passed its checks (on Ray: against the
cluster's nodes). SIGTERM and SIGHUP are handled like Ctrl-C: the cells that finished are kept, the running
cell's partial run is saved, the matrix file names the cell(s) that were interrupted, and `--resume
MATRIX_ID` later runs only the cells not yet done.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

from advisor.matrix.local import check_local, run_local
from advisor.matrix.progress import CellLog
from advisor.matrix.store import MatrixFile
from advisor.run import interrupts


def run_matrix(matrix: MatrixFile, say: Callable[[str], None], *, ray_address: str | None = None,
               ship_code: bool = False, node_wait_s: float = 0.0, check_only: bool = False) -> MatrixFile:
    """Check, then run every unfinished cell of `matrix`; returns it with each cell's final state."""
    log = CellLog(matrix, say)
    if ray_address is None:
        matrix.backend = "local"
        check_local(log)
        if check_only:
            return matrix
        _run(matrix, lambda: run_local(log))
        return matrix
    from advisor.matrix.ray_connect import connect
    from advisor.matrix.ray_runner import RayRunner

    ray = connect(ray_address, say, ship_code=ship_code)
    try:
        runner = RayRunner(ray, log, node_wait_s)
        runner.check()
        matrix.backend = f"ray {ray_address}"
        if not check_only:
            _run(matrix, runner.run)
    finally:
        ray.shutdown()
    return matrix


def _run(matrix: MatrixFile, body: Callable[[], None]) -> None:
    matrix.state, matrix.interrupted = "running", []
    matrix.save()
    interrupted = False
    try:
        with _signals_to_interrupts():
            body()
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:  # also on Ctrl-C: the file says which cells finished and which one was interrupted
        matrix.finish(interrupted)


@contextlib.contextmanager
def _signals_to_interrupts() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP go to advisor's own handler (`interrupts`) while the cells run.

    Set again here because `ray.init` replaces the SIGTERM handler the CLI installed. While a local cell is
    measuring, the handler cancels the load generator so the partial run is saved (an exception raised
    from a signal handler at an arbitrary point of the event loop lost it); elsewhere it raises
    `Interrupted`, a KeyboardInterrupt that exits 128 + the signal.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in interrupts.SIGNALS}
    interrupts.install()
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
