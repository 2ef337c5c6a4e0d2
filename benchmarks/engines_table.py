"""The table of `benchmarks/engines.py`: row labels, medians over repeats, paired ratios to own_engine, issue 12's
targets, and the markdown it writes between its markers in a file.

A row label is an engine, or an engine with options of its own (`own:max_num_batched_tokens=128`): each label is
a row, and each own_engine label gets its own ratios and targets.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.metrics.intervals import Interval

METRICS = ("cold_start_s", "rss_peak_mb", "decode_tok_s", "output_tok_s", "ttft_p50_ms", "ttft_p95_ms",
           "other_load_cores")


def split_label(label: str) -> tuple[str, dict[str, str]]:
    """'own:linear_kernels=openblas-gemv' -> ('own', {'linear_kernels': 'openblas-gemv'}): an engine and options
    of its own, on top of the common ones, as one row of the table."""
    engine, *pairs = label.split(":")
    opts = dict(p.split("=", 1) for p in pairs if "=" in p)
    if len(opts) != len(pairs):
        raise ValueError(f"{label!r}: write an engine with options as ENGINE:KEY=VALUE[:KEY=VALUE]")
    return engine, opts


def is_own(label: str, static_too: bool = False) -> bool:
    return split_label(label)[0] in (("own", "own-static") if static_too else ("own",))


def _interval(vals: list[float]) -> Interval | None:
    from advisor.metrics.intervals import median_interval

    return median_interval(vals) if vals else None


def medians(cells: list[dict]) -> list[dict]:
    """One row per (engine, users): each metric as the median of the repeats with its interval, every verdict."""
    rows = []
    keys = dict.fromkeys((c["engine"], c["users"]) for c in cells)
    for engine, users in keys:
        mine = [c for c in cells if (c["engine"], c["users"]) == (engine, users)]
        ok = [c for c in mine if "error" not in c]
        row: dict[str, Any] = {"engine": engine, "users": users, "repeats": len(ok),
                               "verdicts": [c.get("verdict", "ERROR") for c in mine],
                               "n_ok": [c.get("n_ok") for c in ok],
                               "errors": [c["error"] for c in mine if "error" in c]}
        for k in ("version", "batching", "kv_cache_dtype", "threads"):
            row[k] = ok[0][k] if ok else None
        for m in METRICS:
            row[m] = _interval([c[m] for c in ok if c.get(m) is not None])
        rows.append(row)
    return rows


# (metric, which users cell, higher is better, label): the figures every engine is compared on, own / other
RATIOS = (("decode_tok_s", "low", True, "batch-1 decode tok/s"),
          ("output_tok_s", "high", True, "output tok/s at {high} users"),
          ("ttft_p50_ms", "high", False, "TTFT p50 at {high} users"),
          ("rss_peak_mb", "high", False, "peak RSS at {high} users"),
          ("cold_start_s", "high", False, "cold start at {high} users"))


def measured(which: str, low: int, high: int) -> bool:
    """Whether a run measured a figure: batch-1 figures need a 1-user cell, the others a cell of more users (a
    run of one user count measures only one kind)."""
    return low == 1 if which == "low" else high > 1


def paired_ratio(cells: list[dict], metric: str, users: int, other: str, own: str = "own") -> Interval | None:
    """own / other for `metric`, per round (the two cells of one repeat paired), as median + interval."""
    by = {(c["engine"], c.get("repeat")): c.get(metric) for c in cells
          if c["users"] == users and "error" not in c}
    rounds = sorted({r for (_, r) in by})
    vals = [by[(own, r)] / by[(other, r)] for r in rounds
            if by.get((own, r)) is not None and by.get((other, r))]
    return _interval(vals)


def ratios(cells: list[dict], rows: list[dict], low: int, high: int, own: str = "own") -> list[dict]:
    """Every other engine against own_engine (the row `own`) on each RATIOS figure."""
    others = [r["engine"] for r in rows if r["users"] == low and not is_own(r["engine"], static_too=True)]
    out = []
    for metric, which, higher, label in RATIOS:
        if not measured(which, low, high):
            continue
        users = low if which == "low" else high
        for other in others:
            out.append({"figure": label.format(high=high), "metric": metric, "users": users, "other": other,
                        "own": own, "higher_is_better": higher,
                        "ratio": paired_ratio(cells, metric, users, other, own)})
    return out


def _verdict(iv: Interval | None, factor: float, higher_is_better: bool) -> str | None:
    """'met' when the whole interval meets the target, 'not met' when the whole interval misses it."""
    if iv is None:
        return None
    lo_ok, hi_ok = ((iv.low >= factor, iv.high >= factor) if higher_is_better
                    else (iv.low <= factor, iv.high <= factor))
    if lo_ok and hi_ok:
        return "met"
    if not lo_ok and not hi_ok:
        return "not met"
    return "not established (interval spans the target)"


def targets(cells: list[dict], rows: list[dict], low: int, high: int, own: str = "own") -> list[dict]:
    """Issue 12's four targets for own_engine, each with its figures, the paired ratio and whether it is met."""
    def get(engine: str, users: int, metric: str) -> Interval | None:
        return next((r[metric] for r in rows if r["engine"] == engine and r["users"] == users), None)

    others = [(r["decode_tok_s"].value, r["engine"]) for r in rows
              if r["users"] == low and not is_own(r["engine"], static_too=True) and r["decode_tok_s"]]
    best = max(others, default=(None, None))[1]

    def check(name: str, metric: str, users: int, ref: str | None, factor: float, higher_is_better: bool) -> dict:
        ratio = paired_ratio(cells, metric, users, ref, own) if ref else None
        met = _verdict(ratio, factor, higher_is_better) if ratio else None
        return {"target": name, "own_engine": own, "own": get(own, users, metric),
                "reference": get(ref, users, metric) if ref else None,
                "reference_engine": ref, "ratio": ratio, "factor": factor, "met": met}

    low_checks = [check("batch-1 decode >= 1.0x the best other engine (1 user)", "decode_tok_s", low, best, 1.0,
                        True)] if measured("low", low, high) else []
    high_checks = [check(f"output tok/s at {high} users >= OpenVINO's", "output_tok_s", high, "openvino", 1.0, True),
                   check(f"TTFT p50 at {high} users <= OpenVINO's", "ttft_p50_ms", high, "openvino", 1.0, False),
                   check(f"peak RSS <= 1.2x llama.cpp's ({high} users)", "rss_peak_mb", high, "llama_cpp", 1.2,
                         False)] if measured("high", low, high) else []
    return low_checks + high_checks


def fmt(v: Interval | float | None, spec: str) -> str:
    """'12.3 [11.0, 13.1]' for an interval, '12.3' for one value, '-' for none."""
    if v is None:
        return "-"
    if isinstance(v, (int, float)):
        return f"{v:{spec}}"
    if v.n <= 1:
        return f"{v.value:{spec}}"
    return f"{v.value:{spec}} [{v.low:{spec}}, {v.high:{spec}}]"


def markdown(rows: list[dict], ratio_rows: list[dict], checks: list[dict], command: str, header: str) -> str:
    n = max((r["repeats"] for r in rows), default=0)
    cov = next((iv.coverage for r in rows for m in METRICS if (iv := r[m]) is not None and iv.coverage), None)
    how = (f"Each figure: median of {n} repeats [interval of the median, {cov:.0%} coverage, "
           "order statistics (docs/metrics.md)]." if cov else "One repeat: no intervals.")
    lines = [header, "", f"Command: `{command}`", "", how, "",
             "| engine | users | batching | KV | cold start s | decode tok/s | output tok/s | TTFT p50 ms "
             "| TTFT p95 ms | peak RSS MB | other load (cores) | verdicts (n measured) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        verdicts = ", ".join(f"{v} ({n})" for v, n in zip(r["verdicts"], r["n_ok"] + [None] * 9, strict=False))
        if r["errors"]:
            verdicts += f"; error: {r['errors'][0][:80]}"
        lines.append(f"| {r['engine']} | {r['users']} | {r['batching'] or '-'} | {r['kv_cache_dtype'] or '-'} | "
                     f"{fmt(r['cold_start_s'], '.1f')} | {fmt(r['decode_tok_s'], '.1f')} | "
                     f"{fmt(r['output_tok_s'], '.1f')} | {fmt(r['ttft_p50_ms'], '.0f')} | "
                     f"{fmt(r['ttft_p95_ms'], '.0f')} | {fmt(r['rss_peak_mb'], '.0f')} | "
                     f"{fmt(r['other_load_cores'], '.2f')} | {verdicts} |")
    others = list(dict.fromkeys(x["other"] for x in ratio_rows))
    figures = list(dict.fromkeys(x["figure"] for x in ratio_rows))
    for own in dict.fromkeys(x["own"] for x in ratio_rows):
        lines += ["", f"{own} / other engine, median of the per-round ratios [interval]:", "",
                  "| figure | " + " | ".join(f"{own} / {o}" for o in others) + " |",
                  "|---|" + "---|" * len(others)]
        for f in figures:
            cells = {x["other"]: x for x in ratio_rows if x["figure"] == f and x["own"] == own}
            better = "higher" if next(iter(cells.values()))["higher_is_better"] else "lower"
            lines.append(f"| {f} ({better} is better for own) | "
                         + " | ".join(fmt(cells[o]["ratio"], ".2f") for o in others) + " |")
    lines += ["", "| own_engine target | own engine row | own | reference | own / reference | met |",
              "|---|---|---|---|---|---|"]
    for c in checks:
        lines.append(f"| {c['target']} | {c['own_engine']} | {fmt(c['own'], '.1f')} | {fmt(c['reference'], '.1f')} "
                     f"({c['reference_engine'] or '-'}) | {fmt(c['ratio'], '.2f')} | {c['met'] or '-'} |")
    return "\n".join(lines) + "\n"


START, END = "<!-- benchmarks/engines.py:start -->", "<!-- benchmarks/engines.py:end -->"


def write_section(path: Path, section: str) -> None:
    """Put the table between this script's markers in `path`, leaving the rest of the file as it was."""
    block = f"{START}\n{section}{END}\n"
    text = path.read_text() if path.exists() else ""
    if START in text and END in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END) + 1:]
    else:
        text = text + ("\n" if text and not text.endswith("\n") else "") + block
    path.write_text(text)
