"""Console tables (rich) for a Recommendation, the hardware catalog, and a sweep."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from advisor.catalog import Catalog
from advisor.recommend.ranking import Row
from advisor.recommend.recommendation import Recommendation
from advisor.recommend.rests_on import model_name

MAX_LEFT_OUT_LINES = 8


def _usd(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"${v:,.{digits}f}"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _latency(c: Any) -> str:
    """'TTFT/TPOT' ms; an estimate as its ranges 'lo-hi/lo-hi'."""
    if c.source == "estimated" and c.latency_range_ms:
        t, p = c.latency_range_ms.get("ttft_ms"), c.latency_range_ms.get("tpot_ms")
        if t is not None and p is not None:
            return f"{_ms(t.low)}-{_ms(t.high)}/{_ms(p.low)}-{_ms(p.high)}"
    return f"{_ms(c.latency_ms.get('ttft_ms'))}/{_ms(c.latency_ms.get('tpot_ms'))}"


def _labels(rows: tuple[Row, ...]) -> dict[str, str]:
    """'engine @ hardware' per row key, with its config where another row has the same engine and hardware."""
    seen: dict[tuple[str, str], int] = {}
    for r in rows:
        seen[(r.candidate.engine, r.candidate.hardware_id)] = seen.get((r.candidate.engine, r.candidate.hardware_id), 0) + 1
    return {r.key: f"{r.candidate.engine} @ {r.candidate.hardware_id}"
            + (f" ({r.candidate.config})" if seen[(r.candidate.engine, r.candidate.hardware_id)] > 1 else "")
            for r in rows}


def _cost_text(r: Row) -> str:
    if r.price_from_memory:
        return "cost not headlined (price from memory: see the warning)"
    rng = r.monthly_range
    if r.monthly_usd is None:
        return "cost unknown"
    span = f" (range {_usd(rng.low)}-{_usd(rng.high)})" if rng is not None and rng.low != rng.high else ""
    return f"{_usd(r.monthly_usd)}/month{span}"


def price_line(hardware_id: str, usd_per_hour: float | None, source: str, as_of: str = "") -> str:
    """One line under a headline cost: the price it scales with, its source and date, flagged when unverified.
    An override (`as_of` "user") is shown with its own source alone."""
    if usd_per_hour is None:
        return ""
    short = source.split("; ")[0]  # the source itself; its caveats are the flag (and --json, the methodology)
    date = f" (as of {as_of})" if as_of and as_of != "user" and as_of not in short else ""
    # a price resting on fewer providers than the catalog's policy asks for is flagged like an unverified one
    label = "price (unverified)" if "unverified" in source.lower() or "citable provider" in source else "price"
    return f"{label}: ${usd_per_hour:,.2f}/h per {hardware_id}, {short}{date}; every dollar figure scales with it"


def print_headline(rec: Recommendation, con: Console) -> None:
    """What to do, first: the recommendation and its runner-ups, or why there is none and how to get one."""
    best = rec.best
    if rec.evidence is not None:
        con.print(f"[bold red]{rec.evidence.reason[0].upper()}{rec.evidence.reason[1:]}.[/]", highlight=False)
        con.print("[bold]Commands that would produce the missing evidence:[/]")
        for cmd in rec.evidence.commands:
            con.print(f"  {cmd}", highlight=False, soft_wrap=True)
        for n in rec.evidence.notes:
            con.print(f"  [dim]{n}[/]", highlight=False)
    elif best:
        con.print(f"[bold green]Recommended:[/] {best.candidate.engine} serving {model_name(best.candidate.model)} on "
                  f"{best.hardware_name} ({best.candidate.config}), "
                  f"{best.replicas} replica(s), {_cost_text(best)} - {best.why}", highlight=False)
        if not best.price_from_memory and (line := price_line(best.candidate.hardware_id, best.usd_per_hour,
                                                               best.price_source, best.price_as_of)):
            con.print(f"  {line}", highlight=False)
        if rec.rests_on:
            con.print(f"  [bold]rests on:[/] {rec.rests_on}", highlight=False)
        if best.candidate.evidence == "uncalibrated":  # admitted by --allow-uncalibrated: say what it rests on
            con.print(f"  [yellow]rests on:[/] {best.candidate.evidence_note}", highlight=False)
        for r in rec.runners_up:
            con.print(f"  runner-up #{r.rank}: {r.candidate.engine} on {r.hardware_name} ({r.candidate.config}), "
                      f"{_cost_text(r)} - {r.why}",
                      highlight=False)
    else:
        con.print("[bold red]Nothing meets every constraint.[/] Closest options and what would have to give below.")
    for w in rec.warnings:
        con.print(f"[bold yellow]warning:[/] {w}", highlight=False)
    if rec.to_settle:
        con.print("[bold]What would settle the cheaper options the evidence keeps out of the headline:[/]")
        for line in rec.to_settle:
            con.print(f"  - {line}", highlight=False, soft_wrap=True)


def print_recommendation(rec: Recommendation, console: Console | None = None, top: int = 15) -> None:
    con = console or Console()
    print_headline(rec, con)
    con.print(f"[bold]Load:[/] {rec.load_basis}")
    t = Table(title="Ranked options")
    pct = f"p{rec.constraints.percentile:g}"
    for col in ("#", "engine @ hardware", "src", "repl", "$/month", "$/1M out", "$/1M blend", f"{pct} TTFT/TPOT ms",
                "margin"):
        t.add_column(col, overflow="fold")
    label = _labels(rec.rows)
    for r in rec.rows[:top]:
        c = r.candidate
        m = c.min_margin_frac
        style = "green" if r.passes and r.headline_ok else "yellow" if r.passes else "red"
        src = ("meas" if c.source == "measured" else "est") + ("" if r.headline_ok else "?")
        t.add_row(f"[{style}]{r.rank}[/]", label[r.key], src,
                  "-" if r.replicas is None else str(r.replicas), _usd(r.monthly_usd), _usd(r.usd_per_1m_output, 3),
                  _usd(r.usd_per_1m_blended, 3),
                  _latency(c), "-" if m is None else f"{m:.0%}")
    con.print(t)
    for r in rec.rows[:top]:
        con.print(f"  [{'green' if r.passes and r.headline_ok else 'red'}]{r.rank}.[/] {label[r.key]}: {r.why}",
                  highlight=False)
    if len(rec.rows) > top:
        con.print(f"... {len(rec.rows) - top} more rows (use --json for all)")
    con.print("[dim]src: meas = measured, est = roofline estimate (a range; passes only at its pessimistic end), "
              "? = its evidence cannot carry a recommendation; $/1M: one replica kept at its capacity (a fleet "
              "sized with headroom pays more per token; $/month is the fleet's)[/]")
    if rec.advice:
        con.print("[bold]What would have to give:[/]")
        for line in rec.advice.would_have_to_give:
            con.print(f"  - {line}")
    label = {r.key: f"#{r.rank} {r.candidate.engine}@{r.candidate.hardware_id}" for r in rec.rows}
    for f in rec.frontiers:
        con.print(f"[bold]Pareto ({f.cost_axis} vs {f.other_axis}):[/] {', '.join(f.labels) or '-'}",
                  highlight=False)  # labels mark estimates as the table does
    first = rec.break_even[0].row_key if rec.break_even else ""
    shown = [b for b in rec.break_even if b.row_key == first]
    if shown:
        bt = Table(title=f"Break-even of {label[first]} (one replica) vs hosted APIs: cost only, quality differs")
        for col in ("hosted", "hosted $/1M", "self $/1M at full load", "break-even M tokens/month"):
            bt.add_column(col, overflow="fold")
        for b in shown:
            be = "never" if b.break_even_tokens_month_m is None else f"{b.break_even_tokens_month_m:,.0f}"
            bt.add_row(f"{b.provider} {b.model}", f"${b.hosted_usd_per_1m_mix:.3g}",
                       f"${b.self_usd_per_1m_full_load:.3g}", be)
        con.print(bt)
    print_backtest(rec, con)
    for n in rec.notes:
        con.print(f"[dim]note: {n}[/]")
    other = [x.run_id for x in rec.left_out if x.kind == "scenario"]  # the other kinds are in the notes
    if other:
        con.print(f"[dim]note: {len(other)} run(s) of other scenarios left out (scenario {rec.constraints.scenario!r} "
                  f"asked for): {', '.join(other)}[/]", highlight=False)


def print_backtest(rec: Recommendation, con: Console) -> None:
    """The estimator backtest per engine and device class: the same rows the estimates' error bars come from."""
    bk = rec.backtest
    for g in bk.groups:
        t = Table(title=f"Roofline backtest, {g.engine} on {g.device_class.upper()}, {g.model} (leave-one-out): "
                        f"error bar x/÷{g.bar.ttft_factor:.2f} TTFT, x/÷{g.bar.tpot_factor:.2f} TPOT on every "
                        f"{g.engine} {g.device_class.upper()} estimate of this model")
        for col in ("run", "hardware", "TTFT ms meas/est", "error", "TPOT ms meas/est", "error"):
            t.add_column(col, overflow="fold")
        for r in g.rows:
            t.add_row(r.run_id, r.hardware_id, f"{r.ttft_ms_measured:,.1f}/{r.ttft_ms_estimated:,.1f}",
                      f"{r.ttft_error:+.0%}", f"{r.tpot_ms_measured:,.1f}/{r.tpot_ms_estimated:,.1f}",
                      f"{r.tpot_error:+.0%}")
        con.print(t)
    if not bk.groups and any(r.candidate.sized_to_limit for r in rec.rows):
        con.print("[bold]Sizing backtest:[/] the estimated rows are sized from a model config; their ranges come from "
                  "the sizing model's backtest against public measurements (`advisor estimate --backtest`), not from "
                  "these runs", highlight=False)
    elif not bk.groups:
        con.print("[bold]Roofline backtest:[/] none: no engine has two VALID, device-bound runs of one model on one "
                  "device class, so no estimate is calibrated (each carries the stated default x/÷2 and cannot "
                  "headline; with no such run at all there is no estimate, and the notes say why)",
                  highlight=False)
    for line in bk.left_out[:MAX_LEFT_OUT_LINES]:
        con.print(f"  [dim]not a backtest or calibration run: {line}[/]", highlight=False)
    if len(bk.left_out) > MAX_LEFT_OUT_LINES:
        con.print(f"  [dim]... and {len(bk.left_out) - MAX_LEFT_OUT_LINES} more runs left out (--json: backtest.left_out)[/]")


def print_hardware(catalog: Catalog, detected: dict[str, Any] | None, tier: str, console: Console | None = None) -> None:
    con = console or Console()
    t = Table(title=f"Hardware catalog (prices: {tier})")
    for col in ("id", "mem GB", "GB/s", "BF16 TF", "FP8 TF", "TDP W", "$/h"):
        t.add_column(col, overflow="fold")
    sources = []
    for hw in catalog.hardware.values():
        p = catalog.price(hw.id, tier)
        usd = _usd(p.usd_per_hour if p else None, 3) + (" (from memory)" if p and p.from_memory else "")
        t.add_row(hw.id, f"{hw.memory_gb:g}", f"{hw.memory_bw_gbps or '-'}", f"{hw.bf16_tflops_dense or '-'}",
                  f"{hw.fp8_tflops_dense or '-'}", f"{hw.tdp_w or '-'}", usd)
        spec_at = hw.spec_url or "from memory, no page read"
        sources.append(f"{hw.id}: {hw.name}. Interconnect: {hw.interconnect or 'not stated'}. "
                       f"Specs: {hw.spec_source} ({spec_at}; {hw.spec_as_of})"
                       + (f"; {hw.spec_notes}" if hw.spec_notes else "")
                       + (f". Price: {p.source} ({p.as_of})" if p else f". No {tier} price: pass --price {hw.id}=USD"))
    con.print(t)
    for name, rule in catalog.policy.items():
        con.print(f"[bold]Pricing policy, {name}:[/] {rule}", highlight=False)
    con.print("[bold]Dense TFLOPS (sparse kept apart in --json). Sources:[/]")
    for line in sources:
        con.print(f"  {line}", highlight=False)
    if detected:
        bw = detected.get("measured_bw_gbps")
        con.print(f"[bold]This machine:[/] {detected['description']} -> {detected['catalog_id']}"
                  + (f", measured copy bandwidth {bw:.1f} GB/s" if bw else ""))
        fp = detected.get("fingerprint") or {}
        mid = fp.get("machine_id_sha256")
        con.print(f"  fingerprint (what decides that a saved run was made here; the hostname does not): machine-id "
                  f"sha256 {mid[:12] + '...' if mid else 'unknown (no /etc/machine-id: no run is matched to it)'}, "
                  f"GPU UUIDs {', '.join(fp.get('gpu_uuids') or []) or 'none'}", highlight=False)
