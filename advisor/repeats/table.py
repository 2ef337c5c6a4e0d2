"""The console summary of a repeat group: every headline figure as median [interval], with the interval's coverage.

What `advisor bench --repeats N` (and a sweep step with repeats) prints after the runs; the
figures come from `RepeatGroup.figures()`, nothing is computed here.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from advisor.repeats.group import FIGURES, RepeatGroup


def print_group(group: RepeatGroup, console: Console | None = None) -> None:
    """One table: figure, median, interval; then the coverage and the method in words."""
    con = console or Console()
    figs = group.figures()
    t = Table(title=f"{group.n} of {group.planned} repeats, group {group.group_id} ({group.status})")
    for col in ("figure", "median", "interval"):
        t.add_column(col)
    for f in FIGURES:
        iv = figs.get(f.key)
        if iv is None:
            continue
        rng = "-" if iv.is_point else f"[{iv.low:.4g}, {iv.high:.4g}]"
        t.add_row(f"{f.label} ({f.unit})", f"{iv.value:.4g}", rng)
    con.print(t)
    cov = next((iv.coverage for iv in figs.values() if iv.coverage is not None), None)
    if cov is None:
        con.print("one run: no interval (run-to-run noise unknown; repeat to get one)")
    else:
        con.print(f"interval: {cov:.1%} coverage of the true median ({next(iter(figs.values())).method}); "
                  "6 repeats are the fewest with 95%", highlight=False)
    if group.status != "VALID":
        con.print(f"[red]not every repeat is VALID ({group.status}): see each run's verdict[/]")
