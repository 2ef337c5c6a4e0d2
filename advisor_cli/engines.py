"""`advisor engines`: every adapter, available here or why not, and its typed options."""

from __future__ import annotations

import json

import click


@click.command("engines")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list: every engine, available here or why not, "
              "and its options (name, type, default, help).")
def engines_command(as_json: bool) -> None:
    """List every engine adapter: available here, or missing and why (with the install hint)."""
    import adapters

    rows = [{"name": e.name, "available": why is None, "why": why, "extra": e.extra, "summary": e.summary,
             "options": adapters.options_schema(e.name)} for e, why in adapters.available()]
    if as_json:
        click.echo(json.dumps(rows))
        return
    from adapters import embedders
    from advisor.run import console

    console.print_engines(rows)
    click.echo("embedding engines (run with `advisor embed --engine NAME`):")
    console.print_engines([{"name": e.name, "available": (why := embedders.why_unavailable(e.name)) is None,
                            "why": why, "summary": e.summary} for e in embedders.EMBED_REGISTRY.values()])
