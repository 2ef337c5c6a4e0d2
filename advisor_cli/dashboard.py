"""`advisor dashboard [--runs DIR] [--port N]`: the Streamlit dashboard from the installed package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from advisor_cli.options import RUNS


@click.command("dashboard")
@click.option("--runs", "root", type=click.Path(file_okay=False, path_type=Path), default=RUNS,
              show_default=True, help="Folder of saved runs the dashboard shows (and where its Run page saves).")
@click.option("--port", type=click.IntRange(1, 65535), default=8501, show_default=True, help="Port to serve on.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
def dashboard_command(root: Path, port: int, host: str) -> None:
    """Open the dashboard (runs, compare, recommend, run) in a browser: Streamlit, served locally."""
    import importlib.util

    if importlib.util.find_spec("streamlit") is None:
        raise click.ClickException("the dashboard needs Streamlit: pip install 'inference-advisor[dashboard]' "
                                   "(or pip install -e '.[dashboard]' in a checkout)")
    from reports.dashboard import app

    cmd = [sys.executable, "-m", "streamlit", "run", str(Path(app.__file__)), "--server.port", str(port),
           "--server.address", host, "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    click.echo(f"dashboard on http://{host}:{port} over {root.resolve()} (Ctrl-C stops it)", err=True)
    env = {**os.environ, "ADVISOR_RUNS": str(root.resolve())}
    code = subprocess.call(cmd, env=env)  # Ctrl-C reaches Streamlit too (same process group); it exits cleanly
    if code not in (0, -2, 130):
        raise click.ClickException(f"streamlit exited with code {code}")
