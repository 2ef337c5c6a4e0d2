"""Repeat groups on the real fake engine: tagged saved runs, grouped back, medians with stated intervals."""

from __future__ import annotations

import gc
import math
from pathlib import Path

import numpy as np
import pytest

from advisor.repeats.group import group_runs, repeat_tag, run_repeats
from advisor.run.bench import BenchConfig, bench_once
from advisor.saved.store import RunResult, list_runs, load_run
from scenarios.overrides import Overrides


def bench_fake(root: Path, ttft_ms: float, duration_s: float = 0.3, rate: float = 100.0) -> RunResult:
    ov = Overrides(rate_rps=rate, duration_s=duration_s, warmup_s=0.0, max_input_tokens=16, max_output_tokens=4,
                   seed=1)
    return bench_once(BenchConfig(scenario="copilot", engine="fake", overrides=ov, out_dir=root,
                                 engine_options={"ttft_ms": ttft_ms, "tpot_ms": 1.0}))


def test_repeats_are_ordinary_saved_runs_tagged_into_one_group(tmp_path):
    seen = []
    group = run_repeats(lambda i: bench_fake(tmp_path, 10.0 + 5 * i), 3, label="copilot-fake",
                        restart_engine=True, on_repeat=lambda i, r: seen.append(i))
    assert seen == [0, 1, 2] and group.n == 3 and group.planned == 3
    reloaded = load_run(group.runs[1].path)
    tag = repeat_tag(reloaded)
    assert tag is not None and tag.group_id == group.group_id and tag.index == 1 and tag.count == 3
    assert tag.restart_engine
    alone = bench_fake(tmp_path, 10.0)
    groups = group_runs(list_runs(tmp_path))
    assert [g.n for g in groups] == [3, 1] and groups[1].group_id == alone.run_id
    ttft = groups[0].interval("ttft_p50_ms")
    assert ttft is not None and ttft.n == 3 and ttft.coverage == pytest.approx(0.75)
    assert 15.0 <= ttft.value < 20.0 and ttft.low < ttft.value < ttft.high  # delays 10, 15, 20 ms
    assert set(groups[0].figures()) >= {"ttft_p50_ms", "tpot_p50_ms", "output_tokens_per_s", "requests_per_s"}
    assert groups[0].to_dict()["run_ids"] == [r.run_id for r in group.runs]


def test_a_failing_repeat_leaves_the_earlier_ones_saved_and_tagged(tmp_path):
    def one(i: int) -> RunResult:
        if i == 1:
            raise RuntimeError("engine crashed")
        return bench_fake(tmp_path, 5.0)

    with pytest.raises(RuntimeError):
        run_repeats(one, 3)
    (g,) = group_runs(list_runs(tmp_path))
    assert g.n == 1 and g.planned == 3 and repeat_tag(g.runs[0]) is not None


def test_zero_repeats_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        run_repeats(lambda i: None, 0)  # type: ignore[arg-type, return-value]


@pytest.mark.slow
def test_interval_of_six_repeats_covers_the_true_median_at_its_stated_rate(tmp_path):
    """200 seeded trials of 6 repeats on the fake engine, whose TTFT delay is redrawn for every repeat
    (lognormal, median 40 ms: a restarted engine with run-to-run jitter). The true median of a run's p50 TTFT
    is the median delay plus the client's own overhead, measured here at the median delay."""
    base_ms, sigma = 40.0, 0.3
    trials, hits, stated = 200, 0, None
    # 1,215 runs: with automatic GC on, every run starts with a full collection (loadgen's _young_gc_only) that
    # walks everything this pytest process holds (the whole collected suite, torch): about half of each run's 0.42 s
    # in the slow group. Here what is alive now is frozen and GC is off (loadgen then leaves GC alone); a full
    # collection after every run walks only what the runs made since. The same for the baseline and the trials.
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        def bench(out: Path, ttft_ms: float) -> RunResult:
            try:
                return bench_fake(out, ttft_ms, 0.1, 100.0)  # 10 requests; 0.1 s is the shortest window allowed
            finally:
                gc.collect()

        overhead = np.median([bench(tmp_path / "base", base_ms).summary.ttft_ms.at(50) - base_ms
                              for _ in range(15)])
        true_median = base_ms + float(overhead)
        rng = np.random.default_rng(2026)
        for t in range(trials):
            delays = base_ms * np.exp(sigma * rng.standard_normal(6))
            group = run_repeats(lambda i, d=delays, out=tmp_path / f"t{t}": bench(out, float(d[i])),
                                6, restart_engine=True)
            iv = group.interval("ttft_p50_ms")
            assert iv is not None and iv.n == 6
            stated = iv.coverage
            hits += iv.contains(true_median)
    finally:
        gc.unfreeze()
        gc.enable()
    assert stated == pytest.approx(1 - 2 / 64)
    print(f"\n6 repeats, stated coverage {stated:.4f}: the interval held the true median in {hits} of {trials} trials")
    sd = math.sqrt(stated * (1 - stated) / trials)
    assert abs(hits / trials - stated) <= 3.5 * sd + 0.005, (hits, trials, stated)


def test_the_console_table_states_median_interval_and_coverage(tmp_path):
    from io import StringIO

    from rich.console import Console

    from advisor.repeats.table import print_group

    group = run_repeats(lambda i: bench_fake(tmp_path, 10.0 + 5 * i), 3)
    buf = StringIO()
    print_group(group, Console(file=buf, width=120))
    text = buf.getvalue()
    assert "TTFT p50 (ms)" in text and "75.0% coverage of the true median" in text and "[" in text
