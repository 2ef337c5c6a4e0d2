"""`fit_logs`: request logs in, a scenario YAML (+ length pairs + HTML report) out.

Reads every log once (streaming), fits arrivals, lengths and sessions,
writes the scenario to a staging folder, loads it back with the ordinary
loader (so what is written is what `bench` will run), generates a schedule
from it to compare with the log, renders the report, and only then moves
the files into place.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from scenarios.catalog import load_scenario, scenario_from_dict
from scenarios.errors import ScenarioError
from scenarios.fit.arrival_check import ArrivalCheck, choose
from scenarios.fit.arrival_fit import ArrivalFit, fit_arrivals, sig
from scenarios.fit.batch_fit import fit_batched
from scenarios.fit.collect import Collector, LogData
from scenarios.fit.compare import compare
from scenarios.fit.fields import FieldMap
from scenarios.fit.length_fit import LengthMode, fit_lengths
from scenarios.fit.readers import LogFile, LogFormat, detect_kind, read_rows
from scenarios.fit.report import FitReport, LogSource
from scenarios.fit.schema_fit import clamp_arrival, clamp_sessions
from scenarios.fit.session_fit import SessionFit, fit_sessions
from scenarios.fit.small_machine import small_machine_fit
from scenarios.fit.stats import summarize
from scenarios.fit.timestamps import TimeUnit, describe_epoch
from scenarios.fit.writer import SLO_COMMENT, Block, ScenarioText, clean, publish, scenario_name, staged
from scenarios.overrides import MAX_SECONDS
from scenarios.pairs import pairs_file_for, write_pairs
from scenarios.schedule import Overrides, resolve
from scenarios.spec import ArrivalSpec, Fit, Scenario

MAX_DURATION_S = 3600.0
MIN_GROWTH_SHARE = 0.5  # of later turns whose prompt holds the previous prompt and answer, to replay sessions


@dataclass(frozen=True)
class FitOptions:
    logs: tuple[Path, ...]
    out: Path
    name: str | None = None
    fields: FieldMap = field(default_factory=FieldMap)
    log_format: LogFormat = "auto"
    time_unit: TimeUnit = "auto"
    lengths: LengthMode = "pairs"
    model: str | None = None
    rate_rps: float | None = None
    duration_s: float | None = None
    seed: int = 0
    max_pairs: int = 200_000
    html: bool = True


def html_path_for(out: Path) -> Path:
    """my-traffic.yaml -> my-traffic.fit.html"""
    return out.with_name(out.name.removesuffix(out.suffix) + ".fit.html")


def read_logs(opts: FitOptions) -> tuple[LogData, list[LogFile], list[int]]:
    """Stream every log into one Collector; (data, files, rows per file)."""
    col = Collector(seed=opts.seed, max_pairs=opts.max_pairs, model=opts.model)
    files: list[LogFile] = []
    counts: list[int] = []
    for path in opts.logs:
        if not path.exists():
            raise ScenarioError(f"log file {path} does not exist; give the path of a JSONL or CSV request log")
        if not path.is_file():
            raise ScenarioError(f"log {path} is not a file; give JSONL or CSV request logs (.gz is fine)")
        info = LogFile(path=path, kind=detect_kind(path, opts.log_format))
        before = col.n_rows + col.skipped_model
        for row in read_rows(info, opts.fields):
            col.add(row, info)
        col.end_file(info, first=not files)
        files.append(info)
        counts.append(col.n_rows + col.skipped_model - before)
    return col.finish(opts.time_unit), files, counts


def _span_words(s: float) -> str:
    return f"{s / 3600:.3g} h" if s >= 5400 else f"{s / 60:.3g} min" if s >= 120 else f"{s:.3g} s"


def _check_out(out: Path) -> None:
    """Before the logs are read: -o must be a file that can be made in a folder that is, or can be, one."""
    if out.is_dir():
        raise ScenarioError(f"-o {out} is a folder; give a file name ending in .yaml")
    existing = next((p for p in out.absolute().parents if p.exists()), None)
    if existing is None or not existing.is_dir():
        raise ScenarioError(f"-o {out}: {existing} is a file, not a folder; give a path in a folder")


def fit_logs(opts: FitOptions) -> FitReport:
    """Fit, compare, write the YAML (and its pairs file and HTML report) atomically; the report says what was done."""
    if opts.out.suffix.lower() not in (".yaml", ".yml"):
        raise ScenarioError(f"-o {opts.out}: the scenario is written as YAML; give a name ending in .yaml")
    _check_out(opts.out)
    data, files, counts = read_logs(opts)
    span = float(data.t_s[-1])
    if span > MAX_SECONDS:  # a finite but absurd span (a wrong time unit, a stray stamp) is refused like inf
        raise ScenarioError(f"the logs span {span:.3g} s, more than {MAX_SECONDS:g} s (about 116 days); check the "
                            "timestamp field and --time-unit, or fit a shorter stretch of the logs")
    arrival, check, notes = _arrivals(data)
    warnings = [f"arrivals: the fitted {check.process} process misses the log over {len(check.requests)} seeds: "
                + "; ".join(check.misses())] if check.misses() else []
    lengths = fit_lengths(data, opts.lengths)
    sessions = fit_sessions(data.sessions, span) if data.sessions is not None else None
    if sessions is not None:
        sess_spec, sess_notes = clamp_sessions(sessions.spec)
        sessions = replace(sessions, spec=sess_spec)
        notes += sess_notes
    # a log whose later prompts do not hold the previous prompt and answer (a client that resends only the
    # question) is not a conversation a multi-turn run should replay: its requests are fitted as independent
    replay = sessions is not None and (sessions.growth_share is None or sessions.growth_share >= MIN_GROWTH_SHARE)
    if sessions is not None and not replay:
        notes.append(f"sessions: only {sessions.growth_share:.0%} of later turns' prompts hold the previous prompt "
                     "and answer, so the log's clients do not resend the conversation; no `sessions` block is "
                     "written and its requests are fitted as independent ones")
    name = scenario_name(opts.out, opts.name)
    pairs_path = pairs_file_for(opts.out)
    workload = dict(lengths.workload)
    if lengths.mode == "pairs":
        workload = {"pairs": {"file": pairs_path.name}}
    duration = float(opts.duration_s) if opts.duration_s is not None else max(1.0, round(min(span, MAX_DURATION_S)))
    warmup = float(min(60, round(0.05 * duration)))
    names = ", ".join(clean(f.path.name) for f in files)
    when = describe_epoch(data.t0_epoch_s, data.t0_epoch_s + span) if data.t0_epoch_s is not None else None
    rate = arrival.rate_rps
    fit_block, fit_comment = small_machine_fit(arrival.spec, rate, data.lengths,
                                               sessions.spec if sessions is not None and replay else None)
    doc: dict[str, Any] = {
        "name": name,
        "description": (f"Traffic fitted from request logs ({names}): {data.n_rows:,} requests over "
                        f"{_span_words(span)}, {rate:.3g} req/s on average, prompts of {data.lengths.mean_in:.0f} "
                        f"and answers of {data.lengths.mean_out:.0f} tokens on average. Replace this with the real "
                        "use it stands for."),
        "source": (f"Fitted by `advisor scenarios fit` from {names} ({data.n_rows:,} requests"
                   + (f", {when}" if when else "") + f") on {datetime.now(UTC).strftime('%Y-%m-%d')}; "
                   "timestamps and token counts only, no prompt or completion text."),
        "workload": workload, "arrival": arrival.spec, "duration_s": duration, "warmup_s": warmup,
        "slos": {"ttft_ms": None, "tpot_ms": None, "e2e_ms": None, "percentile": 95},
    }
    if sessions is not None and replay:  # the sessions drive the arrivals: one of the two in the YAML
        del doc["arrival"]
        doc["sessions"] = dict(sessions.spec)
    doc["fit"] = fit_block
    notes += list(lengths.notes)
    if opts.rate_rps is not None:  # scale the fitted process to the asked mean rate, as --rate does on bench
        s = scenario_from_dict({**doc, "workload": {"input": {"dist": "fixed", "value": 1},
                                                     "output": {"dist": "fixed", "value": 1}}})
        st = resolve(s, Overrides(full_scale=True, rate_rps=opts.rate_rps))
        if st.sessions is not None:
            doc["sessions"]["rate_rps"] = float(f"{st.sessions.rate_rps:.4g}")
            notes.append(f"--rate {opts.rate_rps:g}: sessions start at {st.sessions.rate_rps:.4g}/s instead of the "
                         f"log's {sessions.rate_rps:.4g}/s, so turns go out at {opts.rate_rps:g} req/s on average")
        else:
            assert st.arrival is not None
            doc["arrival"] = st.arrival.model_dump(mode="json", exclude_none=True)
            notes.append(f"--rate {opts.rate_rps:g}: the arrival process is scaled from the log's {rate:.4g} req/s "
                         f"({opts.rate_rps / rate:.3g}x), its shape kept")
    text = _scenario_text(doc, data, arrival.why, lengths.comment, sessions, fit_comment, names, when, opts.out.name)
    html_path = html_path_for(opts.out)
    with staged(opts.out.parent) as tmp:
        if lengths.pairs is not None:
            write_pairs(tmp / pairs_path.name, lengths.pairs,
                        [f"(input, output) token pairs of {names}, fitted by advisor scenarios fit; counts only, "
                         "no text", "prefix_blocks: renumbered 512-token prompt blocks shared with earlier requests"])
        (tmp / opts.out.name).write_text(text.render(), encoding="utf-8")
        scenario = load_scenario(tmp / opts.out.name)  # exactly what bench will load
        notes += list(resolve(scenario, Overrides(full_scale=True)).notes)
        cmp = compare(data, _independent(scenario, arrival.spec), opts.seed)
        outputs = {"scenario": str(opts.out)}
        if lengths.pairs is not None:
            outputs["pairs"] = str(pairs_path)
        if opts.html:
            outputs["html"] = str(html_path)
        report = _report(opts, data, files, counts, arrival, lengths, sessions, fit_block, cmp, notes, outputs, when,
                         doc, check, warnings)
        staged_files = [(tmp / pairs_path.name, pairs_path)] if lengths.pairs is not None else []
        if opts.html:
            from scenarios.fit.html import render_fit_html

            (tmp / html_path.name).write_text(render_fit_html(report, text.render()), encoding="utf-8")
            staged_files.append((tmp / html_path.name, html_path))
        publish([*staged_files, (tmp / opts.out.name, opts.out)])
    return report


def _arrivals(data: LogData) -> tuple[ArrivalFit, ArrivalCheck, list[str]]:
    """The fitted arrivals that reproduce the log (checked over seeds), their check, and notes.

    The fit writes only what the scenario schema accepts: shape parameters past its bounds are clamped, and said.
    """
    classic = fit_arrivals(data.t_s)
    spec, notes = clamp_arrival(classic.spec)
    candidates = [replace(classic, spec=spec)]
    if spec["process"] != "gamma":  # the log's gap CV alone, for a log whose idle gaps are its burstiness
        gamma, _ = clamp_arrival({"process": "gamma", "rate_rps": sig(classic.rate_rps), "cv": sig(classic.gap_cv, 3)})
        candidates.append(replace(classic, spec=gamma, why=f"gamma gaps with the log's CV {classic.gap_cv:.3g}"))
    batched = fit_batched(data.t_s, classic)
    if batched is not None:
        candidates.append(batched)
    i, check, checks = choose(data.t_s, [c.spec for c in candidates])
    if i > 0:  # the first family missed; its clamping notes are about a block that is not written
        notes = [f"arrivals: {checks[0].process} ({classic.why}) does not reproduce the log over "
                 f"{len(checks[0].requests)} seeds: " + "; ".join(checks[0].misses())]
    return candidates[i], check, notes


def _independent(scenario: Scenario, arrival: dict[str, Any]) -> Scenario:
    """The scenario the log is compared with: a sessions scenario's requests drawn as independent ones at the
    log's fitted arrivals (a later turn's send time depends on the engine's answer, which no schedule knows)."""
    if scenario.sessions is None:
        return scenario
    return scenario.model_copy(update={"sessions": None, "fit": Fit(),
                                       "arrival": TypeAdapter(ArrivalSpec).validate_python(arrival)})


def _scenario_text(doc: dict[str, Any], data: LogData, arrival_why: str, length_comment: str,
                   sessions: SessionFit | None, fit_comment: str, names: str, when: str | None,
                   file_name: str) -> ScenarioText:
    header = [f"Fitted by `advisor scenarios fit` from {names}: {data.n_rows:,} requests over "
              f"{_span_words(float(data.t_s[-1]))}" + (f" ({when})" if when else "") + ".",
              "Edit `description` to say what this traffic is, and set the SLOs below before judging engines by it.",
              f"Run it: advisor bench --scenario {clean(file_name)}  (its `fit` block scales it to a small machine; "
              "add --full-scale for the real traffic)."]
    blocks = [Block("name", doc["name"]), Block("description", doc["description"]), Block("source", doc["source"]),
              Block("workload", doc["workload"], length_comment),
              Block("duration_s", doc["duration_s"]), Block("warmup_s", doc["warmup_s"]),
              Block("slos", doc["slos"], SLO_COMMENT)]
    rate_words = (f"mean rate {data.t_s.size - 1:,} gaps / {float(data.t_s[-1]):.6g} s = "
                  f"{(data.t_s.size - 1) / float(data.t_s[-1]):.4g} req/s")
    if "arrival" in doc:
        blocks.insert(4, Block("arrival", doc["arrival"], f"{arrival_why}; {rate_words}"))
    if "sessions" in doc and sessions is not None:
        blocks.insert(4, Block("sessions", doc["sessions"],
                               f"{sessions.comment}. The sessions drive the arrivals: a run starts conversations at "
                               "`rate_rps` and sends each turn a think time after the engine's answer, resending the "
                               f"conversation so far (all requests: {rate_words})."))
    blocks.append(Block("fit", doc["fit"], fit_comment))
    return ScenarioText(header, blocks)


def _report(opts: FitOptions, data: LogData, files: list[LogFile], counts: list[int], arrival: Any, lengths: Any,
            sessions: SessionFit | None, fit_block: dict[str, Any], cmp: Any, notes: list[str],
            outputs: dict[str, str], when: str | None, doc: dict[str, Any], check: ArrivalCheck,
            warnings: list[str]) -> FitReport:
    prefix = None
    if data.prefix is not None:
        p = data.prefix
        prefix = {"rows_with_hashes": p.rows, "rows_reusing": p.reused_rows, "hit_ratio": p.hit_ratio,
                  "distinct_reused_blocks": p.distinct_reused_blocks, "complete": p.complete}
        if not p.complete:
            notes.append("prefix reuse was measured on the first rows only (over 5 million distinct block hashes)")
        if lengths.mode == "pairs":
            notes.append("prefix reuse: each resampled request keeps the leading blocks it shared with earlier "
                         "requests in the log (rows are in file order)")
    sess = None
    if sessions is not None:
        sess = {"spec": sessions.spec, "sessions": sessions.n_sessions, "rows": sessions.n_rows,
                "turns": sessions.turns, "think_s": sessions.think_s, "think_from_latency": sessions.think_from_latency,
                "overlaps": sessions.overlaps, "rate_rps": sessions.rate_rps,
                "mean_open_sessions": sessions.mean_open_sessions, "growth_share": sessions.growth_share,
                "new_tokens": sessions.new_tokens, "first_tokens": sessions.first_tokens, "comment": sessions.comment,
                "replayed": "sessions" in doc}
        if sessions.n_rows < data.n_rows:
            notes.append(f"{sessions.n_rows:,} of {data.n_rows:,} requests carry a session id; sessions are "
                         "fitted from those" + ("; a run sends only sessions, at their own rate" if "sessions" in doc
                                                else ""))
        if "sessions" in doc:
            notes.append("the comparison draws the fitted lengths as independent requests at the arrival process "
                         "fitted over all requests (not written: the sessions drive a run's arrivals, and a later "
                         "turn goes out a think time after the engine's answer, which no schedule knows)")
    if data.out_of_order:
        notes.append(f"{data.out_of_order:,} rows were earlier than the row before them (merged logs?); all rows "
                     "were sorted by time before fitting")
    if data.no_usage or data.zero_tokens:
        notes.append(f"{data.no_usage + data.zero_tokens:,} requests without usable token counts (missing, or 0 input "
                     "or output tokens: failed or empty) count as arrivals but not in the lengths")
    if len(data.pairs_in) < data.lengths.n:
        notes.append(f"lengths: medians, percentiles and the pairs file come from a uniform sample of "
                     f"{len(data.pairs_in):,} of {data.lengths.n:,} requests; means, min, max and correlation from all")
    sources = [LogSource(str(f.path), f.layout, n, dict(f.fields or {})) for f, n in zip(files, counts)]
    return FitReport(
        name=doc["name"], sources=sources, n_requests=data.n_rows, span_s=float(data.t_s[-1]), start_utc=when,
        time_statement=data.basis.statement, out_of_order=data.out_of_order, no_usage=data.no_usage,
        zero_tokens=data.zero_tokens, skipped_model=data.skipped_model, models=data.models,
        arrival=doc.get("arrival", arrival.spec),
        arrival_why=arrival.why, idle_threshold_s=arrival.idle_threshold_s, idle_gaps=arrival.idle_gaps,
        idle_share=arrival.idle_share, length_mode=lengths.mode, length_comment=lengths.comment,
        input_tokens=summarize(data.pairs_in), output_tokens=summarize(data.pairs_out), length_corr=data.lengths.corr,
        prefix=prefix, cached_ratio=data.cached_ratio, sessions=sess, fit_block=fit_block, comparison=cmp.rows,
        schedule_requests=cmp.n_requests, schedule_duration_s=cmp.duration_s, seed=opts.seed,
        notes=notes + [f"comparison schedule: {n}" for n in cmp.notes if n not in notes], outputs=outputs,
        series=cmp.series, arrival_check=check.to_dict(), warnings=warnings)

