"""`advisor estimate --backtest [FILE] [--write]`: the sizing model against measured rows, and the ranges it gives.

FILE is aiconfigurator's silicon_sample.csv or a subset of it (default: the shipped dense rows). Rows of MoE or
unknown models, disaggregated serving, pipeline parallelism or a GPU x engine without tables are skipped and
counted (advisor/sizing/backtest.py). This module checks the file before the (slow) backtest, prints its
summary, and with --write saves data/fit.yaml, which every estimate's constants and range read.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from advisor_cli.output import Refused, json_document

# The columns backtest.read_rows reads without a default (the others, mode, pp_size, gemm_quant_mode, ... have one)
COLUMNS = ("id", "backend", "system", "model_path", "tp_size", "isl", "osl", "batch_size", "silicon_ttft_ms",
           "silicon_tpot_ms")
SCHEMES = (("in-sample", "in-sample"), ("leave-one-gpu-out", "GPU left out"),
           ("leave-one-model-out", "model left out"), ("transferred", "transferred"))


def check_file(path: Path) -> None:
    """A readable CSV with every column the backtest reads, or one line naming what is wrong."""
    if path.is_dir():
        raise Refused(f"--backtest {path} is a folder; give aiconfigurator's silicon_sample.csv")
    if not path.is_file():
        raise Refused(f"--backtest {path}: no such file; give aiconfigurator's silicon_sample.csv (or no FILE: "
                      "the shipped dense rows)")
    try:
        with open(path, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise Refused(f"--backtest {path}: not a readable CSV ({type(e).__name__}: {e})") from None
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise Refused(f"--backtest {path}: no column {missing[0]!r} (a silicon_sample.csv has "
                      f"{', '.join(COLUMNS)})")


def backtest(file: str | None, write: bool, as_json: bool) -> None:
    """Run the backtest on `file` (None: the shipped rows), print it, and save the fit with `write`."""
    from advisor.sizing import backtest as bt_mod

    path = Path(file).expanduser() if file is not None else bt_mod.SILICON
    check_file(path)
    if not as_json:
        click.echo(f"backtest of {path} ...", err=True)
    bt = bt_mod.run_backtest(path)
    if not bt.of("in-sample"):
        skipped = "; ".join(f"{n} {why}" for why, n in bt.skipped.items()) or "the file has no rows"
        raise Refused(f"--backtest {path}: no row could be predicted ({skipped})")
    factors = bt_mod.range_factors(bt)
    doc = {"source": str(path), **bt_mod.summary(bt), "range_factors": factors,
           "coverage": bt_mod.coverage(bt, factors), "written": None}
    if write:
        doc["written"] = _write(bt, path, factors)
    if as_json:
        click.echo(json_document(doc))
    else:
        _print(doc)


def _write(bt: Any, path: Path, factors: dict[str, dict[str, dict[str, float]]]) -> str:
    """Save fit.yaml unless the backtest would leave estimates without a range or an engine's constants."""
    from advisor.sizing import backtest as bt_mod
    from advisor.sizing.backtest import SILICON, fitted, write_fit

    fit_file = bt_mod.FIT_FILE  # read at call time (a test points it elsewhere)

    bad = [f"{b} {m}" for b, fs in factors.items() for m, v in fs["all"].items() if not math.isfinite(v)]
    if bad:
        raise Refused(f"not written: the backtest of {path} gives no range for {', '.join(bad)} (too few rows); "
                      f"{fit_file} is unchanged")
    lost = sorted(set(fitted()["profiles"]) - set(bt.profiles))
    if lost:
        raise Refused(f"not written: {path} has no rows of {', '.join(lost)}, whose fitted constants "
                      f"{fit_file} holds; {fit_file} is unchanged")
    write_fit(bt, fit_file)
    fitted.cache_clear()
    if path.resolve() != SILICON.resolve():
        click.echo(f"note: {fit_file} is now fitted on {path}, not the shipped rows: every estimate's constants "
                   "and ranges come from it (`advisor estimate --backtest --write` restores them)", err=True)
    return str(fit_file)


def _pct(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{100 * v:.0f}%"


def _print(doc: dict[str, Any]) -> None:
    con = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 200)
    schemes = doc["schemes"]
    con.print(f"backtest of {doc['source']}: {doc['rows']:,} rows predicted; median |predicted / measured - 1|:",
              highlight=False, markup=False)
    for key, label in SCHEMES:
        if key in schemes:
            s = schemes[key]
            con.print(f"  {label:<15} TTFT {_pct(s['ttft_median_abs_error']):>4}, TPOT "
                      f"{_pct(s['tpot_median_abs_error']):>4} ({s['rows']:,} rows)", highlight=False, markup=False)
    t = Table(show_header=True, header_style="bold", title="median |error| per engine x GPU: TTFT / TPOT")
    t.add_column("engine x GPU")
    t.add_column("rows", justify="right")
    present = [(k, label) for k, label in SCHEMES if k in schemes]
    for _, label in present:
        t.add_column(label, justify="right")
    base = schemes.get("in-sample", {}).get("cells", {})
    for cell, c in base.items():
        vals = []
        for k, _ in present:
            x = schemes[k]["cells"].get(cell)
            n = f" ({x['rows']})" if x is not None and x["rows"] != c["rows"] else ""
            vals.append(f"{_pct(x['ttft'])} / {_pct(x['tpot'])}{n}" if x is not None else "-")
        t.add_row(cell, str(c["rows"]), *vals)
    con.print(t)
    cov = doc["coverage"]
    con.print("range factors (an estimate's range is [v / f, v x f]) and the share of measured rows inside it:",
              highlight=False, markup=False)
    for basis, fs in doc["range_factors"].items():
        inside = "; ".join(f"{_pct(cov.get(f'{b}: ttft'))} TTFT, {_pct(cov.get(f'{b}: tpot'))} TPOT of {what}"
                           for b, what in _coverage_rows(basis) if f"{b}: ttft" in cov)
        per = ", ".join(f"{e} x/÷{f['ttft']:.2f} / x/÷{f['tpot']:.2f}" for e, f in fs.items()
                        if e != "all" and math.isfinite(f["ttft"]))
        con.print(f"  {basis:<12} TTFT / TPOT: {per} (all engines x/÷{fs['all']['ttft']:.2f} / "
                  f"x/÷{fs['all']['tpot']:.2f}); inside: {inside}", highlight=False, markup=False)
    skipped = doc["skipped"]
    n_skipped = sum(skipped.values())
    con.print(f"skipped: {n_skipped:,} row{'' if n_skipped == 1 else 's'}" + (":" if skipped else ""), highlight=False,
              markup=False)
    for why, n in sorted(skipped.items(), key=lambda kv: -kv[1]):
        con.print(f"  {n:>6,}  {why}", highlight=False, markup=False)
    if doc["written"]:
        con.print(f"wrote {doc['written']} (the constants and ranges every estimate reads)", highlight=False,
                  markup=False)


def _coverage_rows(basis: str) -> tuple[tuple[str, str], ...]:
    """The coverage keys (backtest.coverage) a basis' factor is checked on, and what those rows are."""
    if basis == "tables":
        return (("tables", "GPU-left-out rows"), ("tables, on leave-one-model-out rows", "model-left-out rows"))
    return ((basis, f"{basis} rows"),)
