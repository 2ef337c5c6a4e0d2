"""Console rendering of runs, scenarios and engines with rich; a progress bar on terminals only."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from advisor.metrics.distribution import Distribution, min_n
from advisor.metrics.lag import not_held_why
from advisor.metrics.registry import METRICS, Metric
from advisor.metrics.turns import SessionStats
from advisor.run.rates import offered_rps
from scenarios.overrides import FLAGS, flag

out = Console()
err = Console(stderr=True)

_STATUS_STYLE = {"VALID": "bold green", "INVALID": "bold red", "SATURATED": "bold yellow", "FAILED": "bold red"}


@contextlib.contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    if not enabled:
        yield None
        return
    with Progress(TextColumn("requests"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as p:
        task = p.add_task("run", total=None)

        def update(done: int, total: int) -> None:
            p.update(task, completed=done, total=total)

        yield update


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(v)


TAILS = (90.0, 95.0, 99.0)  # the latency table's tail columns: p90..p99 of a time, p10..p1 of a rate (`Metric.tail`)


def _dist_row(table: Table, m: Metric, d: Distribution | None) -> None:
    label = f"{m.header} ({m.unit}{', higher is better' if m.better == 'higher' else ''})"
    if d is None:  # saved before the metric existed
        table.add_row(label, "not recorded", *[""] * (2 + len(TAILS)))
        return
    if not d.n:
        table.add_row(label, "0", *["n/a"] * (2 + len(TAILS)))
        return
    table.add_row(label, str(d.n), _fmt(d.mean), _fmt(d.at(50)), *(_tail(d, m.tail(p)) for p in TAILS))


def _tail(d: Distribution, percentile: float) -> str:
    v = d.at(percentile)
    if v is not None:
        return _fmt(v)
    # a sample large enough for it: the distribution was saved before advisor kept this tail (p10, p5, p1)
    return "not recorded" if d.n >= min_n(percentile) else "n too small"


def latency_table(s: Any) -> Table:
    """`bench`'s per-request table: one row per registered metric shown on the console, in the registry's order."""
    t = Table(title="per request (worst tail: p90, p95, p99 of a time; p10, p5, p1 of a rate, where higher is "
                    "better)", title_justify="left")
    for col in ("metric", "n", "mean", "p50", *(f"p{p:g} / p{100 - p:g}" for p in TAILS)):
        t.add_column(col, justify="right" if col != "metric" else "left")
    for m in METRICS:
        if m.console:
            _dist_row(t, m, s.recorded(m.key))
    return t


def goodput_text(s: Any, slo_set: bool) -> str:
    """Goodput with SLO attainment; with no SLO limit set there is none to report (every request would count)."""
    if not slo_set:
        return "n/a: no SLO set (add ttft_ms / tpot_ms / e2e_ms under the scenario's slos)"
    return f"{_fmt(s.goodput_rps, 2)} req/s (SLO attainment {_fmt(100 * (s.slo_attainment or 0))}%)"


def print_run(result: Any, view: bool = False) -> None:
    """The run's summary tables; `view`: printed again from its folder (`advisor show`), so nothing was saved now."""
    s, e, v, sched = result.summary, result.engine, result.verdict, result.schedule
    status = v.status
    out.print(f"[bold]{escape(result.scenario_name or '?')}[/] on [bold]{escape(e.adapter)}[/] "
              f"({escape(str(e.engine))} {escape(str(e.version))}, {escape(str(e.device))}, "
              f"{escape(str(e.precision))}, batching: {escape(str(e.batching))})")
    out.print(f"model: {escape(str(e.model))}")
    placement = e.placement
    ready = e.ready_s
    engine_line = [f"ready in {ready:.1f} s (load + warm-up)" if ready is not None else None,
                   f"converted first in {e.convert_s:.1f} s (once per model: not in ready)" if e.convert_s else None,
                   escape(str(placement["note"])) if placement.get("note") else None]
    if any(engine_line):
        out.print("engine: " + "; ".join(x for x in engine_line if x))
    out.print(f"verdict: [{_STATUS_STYLE.get(status, 'bold')}]{status}[/]")
    for r in v.reasons:
        out.print(f"  - {escape(r)}")
    out.print(latency_table(s))
    if s.sessions:
        print_turns(s.sessions)
    t2 = Table(show_header=False, title="throughput and SLOs", title_justify="left")
    t2.add_column("k")
    t2.add_column("v", justify="right")
    offered = offered_rps(result)
    t2.add_row("requests (measured / ok / errors)", f"{s.n_requests} / {s.n_ok} / {s.n_errors}")
    t2.add_row("offered load", f"{_fmt(offered, 2)} req/s" if offered else sched.mode)
    t2.add_row("throughput", f"{_fmt(s.requests_per_s, 2)} req/s, {_fmt(s.output_tokens_per_s)} output tok/s, "
                             f"{_fmt(s.total_tokens_per_s)} total tok/s")
    slos = result.slos
    limits = ", ".join(f"p{slos.percentile:g} {k[:-3].upper()} <= {limit:g} ms"
                       for k in ("ttft_ms", "tpot_ms", "e2e_ms") if (limit := getattr(slos, k)))
    t2.add_row("goodput", goodput_text(s, slos.any_limit))
    met = s.slo_met
    verdicts = ", ".join(f"{k}: {'met' if ok else 'MISSED'}" for k, ok in met.items() if ok is not None)
    t2.add_row("SLOs", escape(limits or "none") + (f" ({verdicts})" if verdicts else ""))
    lg = result.loadgen
    per_worker = lg.workers
    if per_worker:
        cpu = [w.get("cpu_ms_per_request") for w in per_worker]
        t2.add_row("load generator", escape(
            f"{len(per_worker)} worker{'s' if len(per_worker) > 1 else ''} on {lg.event_loop or 'asyncio'}; "
            + ", ".join(f"#{w.get('worker')}: lag p99 {_fmt(w.get('lag_p99_ms'), 2)} ms, "
                        f"{_fmt(c, 3)} ms CPU/request" + ("" if w.get("exit") == "done" else f" ({w.get('exit')})")
                        for w, c in zip(per_worker, cpu))
            + ("" if lg.held is None else f"; rate {'held' if lg.held else 'NOT held'}")))
    if lg.held is False and (offered := offered_rps(result)):
        out.print(f"[yellow]rate NOT held:[/] {escape(not_held_why(offered, s.requests_per_s, s.n_errors, lg.lag_check))}"
                  f" (the verdict, {escape(status)}, judges the measurement, not whether the rate held)")
    sources = s.token_sources or {}
    if sources:
        t2.add_row("token counts from", escape(", ".join(f"{k} ({v})" for k, v in sources.items())))
    tele = result.telemetry
    if tele.rss_absent_reason:
        t2.add_row("memory (engine process)", "n/a (" + escape(tele.rss_absent_reason) + ")")
    else:
        t2.add_row("memory (engine process)",
                   f"peak {_fmt(tele.rss_peak_mb, 0)} MiB, steady {_fmt(tele.rss_steady_mb, 0)} MiB")
    gpu = tele.gpu
    t2.add_row("GPU", "n/a (" + escape(str(tele.gpu_absent_reason)) + ")" if not gpu else
               f"{_fmt(gpu.get('memory_used_peak_mb'), 0)} MiB peak, {_fmt(gpu.get('power_w_mean'))} W, "
               f"{_fmt(gpu.get('j_per_output_token'), 3)} J/output token")
    out.print(t2)
    for w in token_warnings(s):
        out.print(f"[yellow]warning:[/] {escape(w)}")
    hint = _scale_hint(result)
    if hint:
        out.print(f"[dim]{escape(hint)}[/]")
    for note in result.schedule.notes:  # e.g. a compressed rate profile
        out.print(f"[yellow]note:[/] {escape(str(note))}")
    if result.path is not None:
        out.print(f"{'folder' if view else 'saved'}: {escape(str(result.path))}")


TOKEN_MISMATCH_SHARE = 0.05  # server's and client's output token counts disagree by more than this: say so


def token_warnings(s: Any) -> list[str]:
    """What the token accounting says that the figures alone hide: a server whose token counts disagree with
    the text it sent, and answers shorter than asked (both change every per-token figure)."""
    out = []
    client, gap = s.n_out_client_total, s.token_count_mismatch
    if client and gap is not None and abs(gap) > TOKEN_MISMATCH_SHARE * client:
        claimed = client + gap
        out.append(f"the server counted {claimed:,} output tokens where the text it sent holds {client:,} "
                   f"({gap / client:+.0%}); per-token figures use the server's count, so check its tokenizer or "
                   "usage reporting")
    overruled = (s.token_sources or {}).get("tokenizer_over_usage", 0)
    if overruled:
        out.append(f"for {overruled} of {s.n_ok} successful requests the server's usage claimed over 10% more "
                   "tokens than the model's tokenizer finds in the text it sent; per-token figures use the tokenizer's count "
                   "(token source tokenizer_over_usage), so check the server's tokenizer or usage reporting")
    if s.n_out_short and s.n_ok:
        out.append(f"{s.n_out_short} of {s.n_ok} successful requests got fewer output tokens than they asked for "
                   "(short answers: the engine stopped early), so the run's output lengths are not the scenario's")
    return out


def print_turns(sess: SessionStats) -> None:
    """Multi-turn runs: TTFT and prompt length by turn, prefix reuse and context drops."""
    t = Table(title="by turn (ms; prompt tokens = the conversation sent, shared = repeated from the last turn)",
              title_justify="left")
    for col in ("turn", "n", "TTFT p50", "TTFT p95", "E2E p50", "prompt p50", "prompt max", "shared mean"):
        t.add_column(col, justify="right")
    for row in sess.by_turn:
        ttft, e2e, prompt = row.ttft_ms, row.e2e_ms, row.prompt_tokens
        t.add_row(row.turn, str(row.n), _fmt(ttft.at(50)),
                  _fmt(ttft.at(95)) if ttft.at(95) is not None else "n<20", _fmt(e2e.at(50)),
                  _fmt(prompt.at(50), 0), _fmt(prompt.max, 0), _fmt(row.shared_tokens_mean, 0))
    out.print(t)
    reuse = sess.prefix_reuse
    out.print(f"sessions: {sess.n_sessions} conversations, {_fmt(sess.turns_per_session_mean, 2)} turns "
              f"each on average; {_fmt(100 * reuse) + '%' if reuse is not None else 'n/a'} of later turns' prompt "
              f"tokens repeat the previous turn; context full: {sess.n_truncated} requests dropped "
              f"{sess.turns_dropped} oldest turns")


def _scale_hint(result: Any) -> str | None:
    """The fit that scaled this run down, less what the user's own flags replaced (those are named as theirs)."""
    if not result.schedule.fitted:
        return None
    given = {k: v for k, v in result.schedule.overrides.as_dict().items() if k in FLAGS}
    fit = {k: v for k, v in (result.scenario.get("fit") or {}).items() if v is not None and k not in given}
    arrival = fit.pop("arrival", None)
    sessions = fit.pop("sessions", None)
    replaced = {"rate_rps": ("rate",), "concurrency": ("users", "concurrency")}  # fitted blocks' keys they replace
    hidden = tuple(w for k, words in replaced.items() if k in given for w in words)

    def shown(block: dict[str, Any]) -> str:
        return " ".join(f"{k}={v}" for k, v in block.items()
                        if v is not None and not isinstance(v, dict) and not any(w in k for w in hidden))
    parts = [f"{k}={v}" for k, v in fit.items()]
    if arrival:
        parts.insert(0, "arrival " + shown(arrival))
    if sessions:
        parts.insert(0, "sessions " + shown(sessions))
    yours = "; yours: " + ", ".join(f"{flag(k)} {v}" for k, v in given.items()) if given else ""
    # "fitted", not "scaled down": a fit may also raise the rate (a fitted log's 2.01 req/s runs at 2.5 for a p95)
    return ("Fitted to a small machine (the scenario's fit block: " + (", ".join(parts) or "none left") + yours + "). "
            "On bigger hardware add --full-scale for the real traffic shape, or raise --rate / --length-scale; "
            "`advisor sweep` finds the highest rate that still meets the SLOs.")


def print_scenarios(items: list[Any]) -> None:
    t = Table(title="scenarios", title_justify="left", show_lines=True)
    for c in ("name", "arrival", "SLOs", "what it stands for"):
        t.add_column(c)
    for s in items:
        d = s.model_dump(mode="json")
        arrival = d.get("arrival") or {}
        if d.get("sessions"):  # multi-turn: the sessions block drives the arrivals
            arrival = {"process": "sessions", **{k: v for k, v in d["sessions"].items() if not isinstance(v, dict)},
                       "turns (mean)": (d["sessions"].get("turns") or {}).get("mean")}
        slos = d.get("slos") or {}
        t.add_row(escape(d["name"]), escape(", ".join(f"{k}={v}" for k, v in arrival.items() if v is not None)),
                  escape(", ".join(f"{k}={v}" for k, v in slos.items() if v is not None)),
                  escape(" ".join(str(d.get("description", "")).split())))
    out.print(t)


def print_engines(rows: list[dict[str, Any]]) -> None:
    t = Table(title="engines", title_justify="left")
    for c in ("name", "status", "what it is"):
        t.add_column(c)
    for r in rows:
        status = "[green]available[/]" if r["available"] else f"[red]missing[/]: {escape(str(r['why']))}"
        t.add_row(r["name"], status, escape(r["summary"]))
    out.print(t)
