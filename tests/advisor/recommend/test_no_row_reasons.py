"""Every hardware the user allowed gets a row or a line saying why it has none (issue 38)."""

from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
from advisor.recommend.no_row import NoRow, no_row_lines
from advisor_cli.recommend import recommend_command
from tests.advisor.recommend.h200 import CHAT, SATURATED, copy_runs, load, this_cpu_vm


@pytest.fixture(autouse=True)
def _host_is_vm(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")


def test_mi300x_gets_a_reason_line_in_console_and_json(tmp_path):
    root = copy_runs(tmp_path)
    args = ["--runs", str(root), "-s", "chat", "--peak-rps", "20", "--hardware", "mi300x", "--no-measure"]
    d = json.loads(CliRunner().invoke(recommend_command, [*args, "--json"], catch_exceptions=False).output)
    assert not [r for r in d["rows"] if r["hardware"] == "mi300x"]
    (line,) = [n for n in d["notes"] if n.startswith("mi300x")]
    assert line == ("mi300x: no row for own (llama-1b, bf16 / hf-safetensors / continuous): own has no claim to run on "
                    "rocm (engines.yaml); no measured run")
    text = CliRunner().invoke(recommend_command, args, catch_exceptions=False).output
    assert "note: mi300x: no row for own" in text.replace("\n", " ")


def test_every_catalog_hardware_is_ranked_or_explained(tmp_path):
    rec = recommend(load(copy_runs(tmp_path, (CHAT, SATURATED))), Constraints(scenario="chat", peak_rps=20),
                    load_catalog(), detected=this_cpu_vm())
    have = {r.candidate.hardware_id for r in rec.rows}
    said = {h for n in rec.notes if ": no row" in n for h in n.split(": no row")[0].split(", ")}
    listed = {h.id for h in load_catalog().hardware.values()}
    assert listed <= have | said and not have & said - {"h200"}


def test_a_hardware_with_no_reason_still_gets_a_line():
    lines = no_row_lines([NoRow("own (m, c)", "l4", "why")], ("l4", "b200", "h200"), {"h200"}, estimates_on=False)
    assert lines == ["l4: no row for own (m, c): why; no measured run",
                     "b200: no row: estimates are off (--no-estimates); no measured run"]
