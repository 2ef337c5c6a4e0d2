"""Managed server launch: start a server command, wait until it is healthy, stop it.

`ManagedServer("python -m vllm.entrypoints.openai.api_server --model m --port 8000",
health_urls=["http://127.0.0.1:8000/v1/models"], log_path="run/server.log")`
starts the command in its own process group (no shell: leading `VAR=value`
words become environment variables) under `adapters.server_guard`, writes its
stdout and stderr to the log, polls the health URLs until one answers 200,
and `stop()` sends SIGTERM to the whole group, then SIGKILL after a grace
period. Whatever ends advisor, the server goes too: exceptions and the signals
advisor handles (SIGINT, SIGTERM, SIGHUP) reach `stop()`, atexit covers a
normal exit, and the guard stops the group when advisor dies without either
(SIGKILL). It knows nothing about benchmarking; the `openai` adapter uses it
for `--launch`.
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from adapters.base import EngineUnavailable

_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def split_command(command: str) -> tuple[list[str], dict[str, str]]:
    """Split a command line into argv and the `VAR=value` assignments written before it."""
    words = shlex.split(command)
    env: dict[str, str] = {}
    while words and _ENV_WORD.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    if not words:
        raise ValueError(f"launch command has no program to run: {command!r}")
    return words, env


_SECRET_WORD = re.compile(r"key|token|secret|password", re.IGNORECASE)


def redacted_command(command: str) -> str:
    """The command with secret-looking values hidden (`--api-key X`, `--hf-token=X`, `API_KEY=X`), for results."""
    words = shlex.split(command)
    out: list[str] = []
    hide_next = False
    for w in words:
        name, eq, _ = w.partition("=")
        if hide_next:
            out.append("REDACTED")
            hide_next = False
        elif eq and _SECRET_WORD.search(name):
            out.append(f"{name}=REDACTED")
        else:
            out.append(w)
            hide_next = w.startswith("-") and bool(_SECRET_WORD.search(w)) and not eq
    return shlex.join(out)


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    """True when GET url answers 2xx within the timeout."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return 200 <= resp.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


class ManagedServer:
    """One server process group started from a command line and stopped at the end."""

    def __init__(self, command: str, *, health_urls: list[str], log_path: str | Path | None,
                 health_timeout_s: float = 300.0, grace_s: float = 15.0) -> None:
        """`log_path` None: the log goes to a temporary folder of its own, which `close()` removes unless
        `keep_log()` was called (an error that names the log keeps it)."""
        self.argv, self.env = split_command(command)
        if not health_urls:
            raise ValueError("ManagedServer needs at least one health URL")
        if health_timeout_s <= 0 or grace_s < 0:
            raise ValueError(f"health_timeout_s must be > 0 and grace_s >= 0, got {health_timeout_s}, {grace_s}")
        self.command = command
        self.health_urls = list(health_urls)
        self._temp_dir = None if log_path is not None else Path(tempfile.mkdtemp(prefix="advisor-server-"))
        self.log_path = Path(log_path) if log_path is not None else self._temp_dir / "server.log"
        self.health_timeout_s = float(health_timeout_s)
        self.grace_s = float(grace_s)
        self._proc: subprocess.Popen[bytes] | None = None  # the guard, leader of the server's process group
        self._lifeline: int | None = None  # write end of the guard's pipe: closed when this process ends

    @property
    def pid(self) -> int | None:
        """The server process (for memory and CPU telemetry), else the guard while it is starting."""
        if self._proc is None:
            return None
        import psutil

        try:
            children = psutil.Process(self._proc.pid).children()
        except psutil.Error:
            return self._proc.pid
        return children[0].pid if children else self._proc.pid

    def start(self) -> int:
        """Start the command and block until it is healthy; returns its pid."""
        assert self._proc is None, "ManagedServer.start() called twice"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if shutil.which(self.argv[0], path=self.env.get("PATH", os.environ.get("PATH"))) is None:
            raise EngineUnavailable(f"could not start launch command {self.argv[0]!r}: no such program; "
                                    "check the command in --launch")
        log = open(self.log_path, "ab")
        lifeline_r, self._lifeline = os.pipe()
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", "adapters.server_guard", str(lifeline_r), "--",
                                           *self.argv], stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, pass_fds=(lifeline_r,),
                                          env={**os.environ, **self.env, "PYTHONPATH": _pythonpath()},
                                          start_new_session=True)
        except OSError as e:
            os.close(self._lifeline)
            self._lifeline = None
            raise EngineUnavailable(f"could not start launch command {self.argv[0]!r}: {e}; "
                                    "check the command in --launch") from e
        finally:
            log.close()  # the child holds its own descriptor
            os.close(lifeline_r)
        atexit.register(self.stop)
        _running.append(self)
        try:
            self._wait_healthy()
        except BaseException:  # not healthy, or Ctrl-C/SIGTERM while waiting: never leave it running
            self.stop()
            raise
        return self.pid or self._proc.pid

    def _wait_healthy(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.health_timeout_s
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                self.keep_log()  # the message sends the user to it
                raise EngineUnavailable(f"launched server exited with code {code} before becoming healthy; "
                                        f"last lines of {self.log_path}:\n{self.log_tail()}")
            if any(http_ok(u) for u in self.health_urls):
                return
            time.sleep(0.5)
        self.keep_log()
        raise EngineUnavailable(f"launched server not healthy after {self.health_timeout_s:.0f} s "
                                f"(polled {', '.join(self.health_urls)}); raise health_timeout_s or check "
                                f"{self.log_path}:\n{self.log_tail()}")

    def stop(self) -> int | None:
        """SIGTERM the process group, SIGKILL after the grace period; returns the exit code."""
        proc, self._proc = self._proc, None
        if self in _running:
            _running.remove(self)
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None
        if proc is None:
            return None
        atexit.unregister(self.stop)
        if proc.poll() is None:
            self._signal(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=self.grace_s)
            except subprocess.TimeoutExpired:
                self._signal(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        # children that outlived the leader (e.g. engine workers) share its group
        self._signal(proc.pid, signal.SIGKILL)
        return proc.returncode

    def keep_log(self) -> Path:
        """The log's path, kept past `close()` (an error or a message names it)."""
        self._temp_dir = None
        return self.log_path

    def close(self) -> None:
        """Stop the server; remove its temporary log folder unless it was kept (a saved run copied the log)."""
        self.stop()
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    @staticmethod
    def _signal(pgid: int, sig: signal.Signals) -> None:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass  # the group is already gone: nothing left to stop

    def exited(self) -> int | None:
        """The server's exit code if it ended on its own (it was not stopped), else None."""
        return self._proc.poll() if self._proc is not None else None

    def log_tail(self, n_lines: int = 20) -> str:
        """The last lines of the server log (for error messages)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n_lines:])


_running: list[ManagedServer] = []  # started and not stopped


def deaths() -> list[str]:
    """One line per launched server that exited on its own while advisor still needed it, with its exit code."""
    out = []
    for server in list(_running):
        code = server.exited()
        if code is not None:
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() \
                else f"exited with code {code}"
            out.append(f"the launched server ({server.argv[0]}) {how} during the run; its requests failed from then "
                       f"on (see its log, server.log in the run folder)")
    return out


def _pythonpath() -> str:
    """This project's root first, so the guard module is found wherever advisor runs from."""
    root = str(Path(__file__).resolve().parent.parent)
    return os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
