"""Headless Chromium (Debian's /usr/bin/chromium, driven by Playwright) and the dashboard on loopback.

Nothing is downloaded: Playwright is pointed at the system browser (never
`playwright install`). Screenshots and the downloaded report go to
$ADVISOR_ARTIFACTS (default: a pytest tmp folder); the path is printed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.saved.store import RunResult, list_runs
from tests.reports.make_runs import make_runs

CHROMIUM = os.environ.get("ADVISOR_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("ADVISOR_ARTIFACTS")
    path = Path(env) if env else tmp_path_factory.mktemp("artifacts")
    path.mkdir(parents=True, exist_ok=True)
    print(f"\nbrowser test artifacts (screenshots, report): {path}")
    return path


@pytest.fixture(scope="session")
def browser_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RunResult]]:
    root = tmp_path_factory.mktemp("browser-runs")
    make_runs(root)
    return root, list_runs(root)


@pytest.fixture(scope="session")
def context(browser_runs, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A Playwright browser context on a fresh profile.

    It depends on `browser_runs` so the runs are benchmarked first: Playwright's sync API keeps an
    event loop running, inside which `run_bench` (asyncio.run) cannot start.
    """
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: `apt-get install -y chromium` (or set ADVISOR_CHROMIUM)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        try:
            yield ctx
        finally:
            ctx.close()


@pytest.fixture
def page(context) -> Iterator:
    """A new tab that records console errors, page errors and any JS dialog (which it dismisses)."""
    pg = context.new_page()
    pg.errors, pg.dialogs = [], []
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    yield pg
    pg.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def dashboard(browser_runs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`streamlit run app.py` on a free loopback port over the fixture runs; yields its URL."""
    pytest.importorskip("streamlit")
    root, _ = browser_runs
    port = _free_port()
    log = tmp_path_factory.mktemp("streamlit") / "streamlit.log"
    env = {**os.environ, "ADVISOR_RUNS": str(root), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    cmd = [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true", "--server.fileWatcherType", "none",
           "--browser.gatherUsageStats", "false"]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start (exit {proc.poll()}); log:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def shot(page, artifacts: Path, name: str) -> Path:
    path = artifacts / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def copy_artifact(src: Path, artifacts: Path) -> Path:
    dst = artifacts / src.name
    shutil.copyfile(src, dst)
    return dst
