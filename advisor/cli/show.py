"""`advisor show RUN`: a saved run printed again."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("show")
@click.argument("run")
@click.option("--runs", "root", type=click.Path(path_type=Path), default=Path("runs"), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the saved result.json.")
def show_command(run: str, root: Path, as_json: bool) -> None:
    """Show a saved run (a run folder or a run id under --runs)."""
    from advisor import console
    from advisor.store import load_run

    result = load_run(run, root)
    if as_json:
        click.echo(json.dumps(result.to_dict(), allow_nan=False))
    else:
        console.print_run(result)
