"""`advisor estimate`'s console output (rich): a header, one row per GPU x TP x engine, then why and where from.

Rows that cannot be estimated say why below the table, grouped where the reason repeats; when no option fits
at all the table is left out and each GPU x engine says why in one line. The notes are printed once each.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from advisor.sizing.architecture import Architecture
    from advisor.sizing.estimate import Gpu, SizingEstimate

_COLUMNS = (("ttft_ms", "TTFT ms"), ("tpot_ms", "TPOT ms"), ("output_tok_s", "output tok/s"),
            ("requests_per_s", "req/s"))


def num(v: float | None) -> str:
    """About three significant figures, with thousands separators: 2,615 / 148 / 12.5 / 3.72 / 0.041."""
    if v is None:
        return "-"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"


def _cell(r: SizingEstimate, key: str) -> str:
    v = getattr(r, key)
    if v is None:
        return "-"
    lo, hi = (r.range or {}).get(key, (None, None))
    return f"{num(v)} [{num(lo)}-{num(hi)}]" if lo is not None else num(v)


def _header(arch: Architecture, gpus: list[Gpu], engines: tuple[str, ...], prec: str, isl: int, osl: int,
            load: str) -> list[str]:
    on = f"{gpus[0].name} ({gpus[0].id})" if len(gpus) == 1 else f"{len(gpus)} GPUs ({', '.join(g.id for g in gpus)})"
    return [f"{arch.name}: {arch.n_params / 1e9:.1f} B parameters ({arch.source})",
            f"on {on}; engine {', '.join(engines)}; {prec}; ISL {isl:,}, OSL {osl:,}; {load}"]


def _option(r: SizingEstimate) -> str:
    return f"{r.tp} x {r.hardware}"


def _short_of_rate(r: SizingEstimate) -> bool:
    """Fits and has figures, but one replica does not serve the rate asked (the figures are its most)."""
    return r.fits and r.why is not None and r.ttft_ms is not None


def _whys(rows: list[SizingEstimate]) -> list[str]:
    """One line per reason: the options that share it (same GPU and engine, any TP) named together. With many
    rows, those short of the rate are left to the table's legend (each row's req/s is the most it serves)."""
    by: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for r in rows:
        if r.why and (len(rows) == 1 or not _short_of_rate(r)):
            by[(r.hardware, r.engine, r.why)].append(r.tp)
    return [f"{'/'.join(map(str, tps))} x {hw} {engine}: {why}" for (hw, engine, why), tps in by.items()]


def _nowhere(rows: list[SizingEstimate]) -> list[str]:
    """Nothing fits: one line per GPU x engine, its one reason, or the one at the highest TP (it names a remedy)."""
    groups: dict[tuple[str, str], list[SizingEstimate]] = defaultdict(list)
    for r in rows:
        groups[(r.hardware, r.engine)].append(r)
    out = []
    for (hw, engine), rs in groups.items():
        tps = "/".join(str(r.tp) for r in rs)
        if len({r.why for r in rs}) == 1:
            out.append(f"{tps} x {hw} {engine}: {rs[-1].why}")
        else:
            out.append(f"fits on none of {tps} x {hw} under {engine}; at TP {rs[-1].tp}: {rs[-1].why}")
    return out


def _unique(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(x for x in lines if x))


def _notes(est: list[SizingEstimate]) -> list[str]:
    """Each note once; with many rows only those every row of its engine shares (not each TP's memory figures)."""
    if len(est) == 1:
        return list(est[0].notes)
    shared = []
    for engine in dict.fromkeys(r.engine for r in est):
        mine = [set(r.notes) for r in est if r.engine == engine]
        shared += [n for r in est if r.engine == engine for n in r.notes if all(n in m for m in mine)]
    shared = _unique(shared)
    rest = len(_unique([n for r in est for n in r.notes])) - len(shared)
    return shared + ([f"and {rest} notes on single rows (memory reserves per TP): --json has every row's"]
                     if rest else [])


def print_estimates(arch: Architecture, gpus: list[Gpu], engines: tuple[str, ...], prec: str, isl: int, osl: int,
                    load: str, rows: list[SizingEstimate], console: Console | None = None) -> None:
    """The header, the rows, why the others have no estimate, where the figures and their range come from."""
    con = console or Console(file=sys.stdout, width=None if sys.stdout.isatty() else 200)
    for line in _header(arch, gpus, engines, prec, isl, osl, load):
        con.print(line, highlight=False, soft_wrap=True, markup=False)
    if not any(r.fits for r in rows):
        for line in _nowhere(rows):
            con.print(line, highlight=False, soft_wrap=True, markup=False)
        return
    t = Table(show_header=True, header_style="bold")
    for name in ("option", "engine", "fits", "max conc.", *(label for _, label in _COLUMNS), "basis"):
        t.add_column(name, justify="left" if name in ("option", "engine", "fits", "basis") else "right")
    for r in rows:
        fits = "no" if not r.fits else ("yes*" if _short_of_rate(r) else "yes")
        cells = (_option(r), r.engine, fits, f"{r.max_concurrency:,}" if r.fits else "-",
                 *(_cell(r, key) for key, _ in _COLUMNS), r.basis or "-")
        t.add_row(*(Text(c) for c in cells))
    con.print(t)
    est = [r for r in rows if r.ttft_ms is not None]  # with figures (a rate not reached has them, at the most served)
    if any(_short_of_rate(r) for r in rows):
        con.print(f"yes*: fits, but one replica serves less than {load}: the row is the most it serves at "
                  f"{'its' if len(rows) == 1 else 'each'} max concurrency; add replicas", highlight=False, markup=False)
    sections = (("why", _whys(rows)), ("basis", _unique([r.basis_note for r in est])),
                ("range", _unique([r.error_note for r in est])), ("notes", _notes(est)))
    for title, lines in sections:
        if lines:
            con.print(f"[bold]{title}[/]:", highlight=False)
            for line in lines:
                con.print(f"  {line}", highlight=False, soft_wrap=True, markup=False)
