"""`advisor scenarios` (a group: the list by default) and `advisor scenarios fit` as a user meets them."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from plotly.offline import get_plotlyjs

from advisor_cli import cli
from scenarios.catalog import load_scenario
from tests.scenarios.fit.make_logs import gamma_times, lognormal_lengths, openai_rows, write_jsonl

FAST = ["--engine", "fake", "--opt", "ttft_ms=2", "--opt", "tpot_ms=1", "--duration", "2", "--warmup", "0.5",
        "--rate", "20"]


def test_listing_stays_the_default() -> None:
    default = CliRunner().invoke(cli, ["scenarios", "--json"])
    explicit = CliRunner().invoke(cli, ["scenarios", "list", "--json"])
    assert default.exit_code == explicit.exit_code == 0
    assert json.loads(default.output) == json.loads(explicit.output)
    assert "copilot" in CliRunner().invoke(cli, ["scenarios"]).output
    helped = CliRunner().invoke(cli, ["scenarios", "--help"])
    assert "fit" in helped.output and "list" in helped.output


@pytest.fixture(scope="module")
def gateway_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(7)
    t = gamma_times(rng, 3.0, 1.5, 1800)
    rows = openai_rows(t, lognormal_lengths(rng, t.size, 700, 0.7), lognormal_lengths(rng, t.size, 90, 0.6),
                       session_id=[f"s{i // 3}" for i in range(t.size)])
    return write_jsonl(tmp_path_factory.mktemp("logs") / "gateway.jsonl.gz", rows)


def test_fit_writes_a_scenario_that_bench_runs_unchanged(gateway_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "my-traffic.yaml"
    res = CliRunner().invoke(cli, ["scenarios", "fit", str(gateway_log), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)  # one JSON document and nothing else
    assert doc["outputs"] == {"scenario": str(out), "pairs": str(tmp_path / "my-traffic.pairs.csv.gz"),
                              "html": str(tmp_path / "my-traffic.fit.html")}
    assert doc["sources"][0]["layout"] == "OpenAI-style JSONL" and doc["n_requests"] > 4000
    stats = {(r["quantity"], r["stat"]) for r in doc["comparison"]}
    for q in ("input tokens", "output tokens", "gap between requests (s)"):
        assert {(q, s) for s in ("mean", "median", "p90", "p99", "cv", "KS distance")} <= stats
    assert doc["sessions"]["sessions"] == (doc["n_requests"] + 2) // 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-traffic.fit.html", "my-traffic.pairs.csv.gz",
                                                          "my-traffic.yaml"]  # no staging left behind
    s = load_scenario(out)
    # session ids, but prompts that do not grow by the previous answer: not conversations to replay
    assert s.name == "my-traffic" and s.sessions is None and s.arrival is not None
    assert not doc["sessions"]["replayed"] and any("do not resend the conversation" in n for n in doc["notes"])
    for f in (out, tmp_path / "my-traffic.fit.html"):
        assert "secret" not in f.read_text()  # prompt and completion text never read
    assert b"secret" not in gzip.decompress((tmp_path / "my-traffic.pairs.csv.gz").read_bytes())
    run = CliRunner().invoke(cli, ["bench", "--scenario", str(out), *FAST, "--out", str(tmp_path / "runs"), "--json"])
    assert run.exit_code == 0, run.output
    result = json.loads(run.output)
    assert result["scenario"]["name"] == "my-traffic" and result["summary"]["n_ok"] > 10
    assert result["summary"]["sessions"] is None


@pytest.fixture(scope="module")
def chat_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Conversations of 3 turns whose every prompt holds the previous prompt and answer (a chat front end)."""
    rng = np.random.default_rng(8)
    t = gamma_times(rng, 3.0, 1.0, 1200)
    n_out = lognormal_lengths(rng, t.size, 60, 0.5)
    n_in = lognormal_lengths(rng, t.size, 300, 0.5)
    for i in range(t.size):
        if i % 3:
            n_in[i] = n_in[i - 1] + n_out[i - 1] + int(rng.integers(10, 60))
    rows = openai_rows(t, n_in, n_out, session_id=[f"c{i // 3}" for i in range(t.size)])
    return write_jsonl(tmp_path_factory.mktemp("logs") / "chat.jsonl", rows)


def test_a_fitted_chat_log_runs_as_multi_turn_conversations(chat_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "chat.yaml"
    res = CliRunner().invoke(cli, ["scenarios", "fit", str(chat_log), "-o", str(out), "--no-html", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["sessions"]["replayed"] and doc["sessions"]["growth_share"] == 1.0
    s = load_scenario(out)
    assert s.arrival is None and s.sessions is not None and s.sessions.turns.value == 3
    assert s.sessions.new_tokens is not None and 10 <= s.sessions.new_tokens.min <= s.sessions.new_tokens.max < 60
    run = CliRunner().invoke(cli, ["bench", "--scenario", str(out), *FAST, "--out", str(tmp_path / "runs"), "--json"])
    assert run.exit_code == 0, run.output
    result = json.loads(run.output)
    sess = result["summary"]["sessions"]  # the multi-turn path ran: turns resent the conversation
    assert sess is not None and sess["n_sessions"] > 3 and sess["prefix_reuse"] > 0.5
    assert [row["turn"] for row in sess["by_turn"]][:2] == ["1", "2"]
    rated = CliRunner().invoke(cli, ["scenarios", "fit", str(chat_log), "-o", str(tmp_path / "r.yaml"), "--rate", "6",
                                     "--no-html", "--json"])
    assert rated.exit_code == 0, rated.output
    assert load_scenario(tmp_path / "r.yaml").sessions.rate_rps == pytest.approx(2.0)  # 6 turns/s, 3 per session


def test_fit_console_report_and_html(gateway_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.yaml"
    res = CliRunner().invoke(cli, ["scenarios", "fit", str(gateway_log), "-o", str(out)])
    assert res.exit_code == 0, res.output
    for text in ("OpenAI-style JSONL", "since 1970", "0 rows out of order", "KS distance", "SLOs: left unset",
                 "wrote scenario", "next: advisor bench --scenario"):
        assert text in res.output
    page = (tmp_path / "t.fit.html").read_text()
    assert page.count(get_plotlyjs()[:300]) == 1  # plotly.js inlined once
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page, re.I)  # nothing fetched: opens offline
    assert page.count('type="application/json"') == 5 and "Plotly.newPlot" in page
    assert "KS distance" in page and "SLOs</strong>: left unset" in page
    # the comparison schedule is longer than a full-scale run of the scenario: the page must not say "exactly as"
    assert "exactly as" not in page and "but longer than\nthe scenario's own run" in page


def test_lognormal_option_rate_and_name(gateway_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "ln.yaml"
    res = CliRunner().invoke(cli, ["scenarios", "fit", str(gateway_log), "-o", str(out), "--lengths", "lognormal",
                                   "--rate", "6", "--name", "gateway-day", "--no-html", "--json"])
    assert res.exit_code == 0, res.output
    s = load_scenario(out)
    assert s.name == "gateway-day" and s.workload.input.dist == "lognormal" and s.workload.log_correlation is not None
    assert s.arrival.rate_rps == pytest.approx(6.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ln.yaml"]
    assert any("--rate 6" in n for n in json.loads(res.output)["notes"])


def test_bench_says_when_it_compresses_a_rate_profile(tmp_path: Path) -> None:
    (tmp_path / "day.yaml").write_text(
        "name: day\ndescription: A day of traffic as a rate curve, for the tests.\n"
        "workload: {input: {dist: fixed, value: 20}, output: {dist: fixed, value: 4}}\n"
        "arrival: {process: profile, step_s: 3600, rates_rps: [10, 30, 20, 20], cv: 1.0}\nduration_s: 14400\n")
    res = CliRunner().invoke(cli, ["bench", "--scenario", str(tmp_path / "day.yaml"), *FAST, "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "note: the 4 h rate profile is compressed" in " ".join(res.output.split())
