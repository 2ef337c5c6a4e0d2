"""Managed launch: a server that dies or never gets healthy fails start() with its log; stop() ends the group."""

from __future__ import annotations

import sys
import time

import psutil
import pytest

from adapters.base import EngineUnavailable
from adapters.launch import ManagedServer, redacted_command, split_command
from tests.servers.mock_openai import free_port


def test_env_words_before_the_command_become_its_environment():
    argv, env = split_command("A=1 B='x y' python -m srv --port 8")
    assert argv == ["python", "-m", "srv", "--port", "8"] and env == {"A": "1", "B": "x y"}
    with pytest.raises(ValueError):
        split_command("A=1")


def test_a_server_that_exits_early_fails_with_its_log(tmp_path):
    srv = ManagedServer(f"{sys.executable} -c \"print('bad flag --foo'); raise SystemExit(3)\"",
                        health_urls=[f"http://127.0.0.1:{free_port()}/health"], log_path=tmp_path / "server.log")
    with pytest.raises(EngineUnavailable, match="exited with code 3") as info:
        srv.start()
    assert "bad flag --foo" in str(info.value)


def test_a_temporary_log_folder_goes_at_close_unless_kept_and_a_given_log_always_stays(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    health = [f"http://127.0.0.1:{free_port()}/health"]
    ManagedServer("true", health_urls=health, log_path=None).close()
    assert not list((tmp_path / "tmp").iterdir())  # never started: nothing left either
    srv = ManagedServer(f"{sys.executable} -c \"raise SystemExit(3)\"", health_urls=health, log_path=None)
    with pytest.raises(EngineUnavailable, match="exited with code 3") as info:
        srv.start()
    srv.close()
    assert str(srv.log_path) in str(info.value) and srv.log_path.is_file()  # the error names it: kept
    given = ManagedServer("true", health_urls=health, log_path=tmp_path / "mine" / "server.log")
    given.log_path.parent.mkdir()
    given.log_path.write_text("x")
    given.close()
    assert given.log_path.read_text() == "x"


def test_a_server_never_healthy_is_stopped_with_its_children(tmp_path):
    # the leader starts a child in the same group; both must be gone after the health timeout
    code = ("import subprocess, sys, time; "
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
            "print(c.pid, flush=True); time.sleep(60)")
    srv = ManagedServer(f"{sys.executable} -c \"{code}\"", health_urls=[f"http://127.0.0.1:{free_port()}/health"],
                        log_path=tmp_path / "server.log", health_timeout_s=1.5, grace_s=2)
    with pytest.raises(EngineUnavailable, match="not healthy"):
        srv.start()
    child = int(next(w for w in (tmp_path / "server.log").read_text().split() if w.isdigit() and
                     f"server pid {w}" not in (tmp_path / "server.log").read_text()))
    time.sleep(0.2)
    try:  # gone, or a zombie waiting for init to reap it: either way no longer running
        assert psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        pass


def test_secrets_in_the_launch_command_never_reach_results():
    cmd = "HF_TOKEN=hf_abc python -m vllm.entrypoints.openai.api_server --api-key sk-1 --hf-token=hf_x --port 8"
    shown = redacted_command(cmd)
    assert "hf_abc" not in shown and "sk-1" not in shown and "hf_x" not in shown
    assert "--port 8" in shown and "--api-key REDACTED" in shown
