"""`advisor engines`: every adapter, available here or why not, and its typed options."""

from __future__ import annotations

import json

import click


@click.command("engines")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list: every engine (generation, embedding "
              "and rerank), the tasks it serves, available here or why not, and its options (name, type, default, "
              "help).")
def engines_command(as_json: bool) -> None:
    """List every engine adapter: available here, or missing and why (with the install hint)."""
    import adapters
    from adapters import embedders

    rows = [{"name": e.name, "tasks": ["generate"], "available": why is None, "why": why, "extra": e.extra,
             "summary": e.summary, "options": adapters.options_schema(e.name)} for e, why in adapters.available()]
    embed_rows = []
    for e in embedders.EMBED_REGISTRY.values():
        why = embedders.why_unavailable(e.name)
        cls = embedders.adapter_class(e.name)
        embed_rows.append({"name": e.name, "tasks": list(cls.tasks), "available": why is None, "why": why,
                           "extra": e.extra, "summary": e.summary, "options": adapters.schema_of(cls.Options)})
    if as_json:
        click.echo(json.dumps(rows + embed_rows))
        return
    from advisor.run import console

    console.print_engines(rows)
    click.echo("embedding and rerank engines (run with `advisor embed --engine NAME`, or name them in `advisor rag`):")
    console.print_engines(embed_rows)
