"""The headline says what it rests on: 'own on H200, 5 replicas' named neither the model, nor that own is
the built-in reference engine, nor that the run was host-bound (`warnings: []`)."""

from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
from advisor_cli import cli
from tests.advisor.recommend.h200 import CHAT, SATURATED, copy_runs, load, this_cpu_vm


@pytest.fixture(autouse=True)
def _host_is_vm(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")


def test_the_headline_names_engine_model_weights_precision_hardware_and_evidence(tmp_path):
    rec = recommend(load(copy_runs(tmp_path, (CHAT, SATURATED))), Constraints(scenario="chat", peak_rps=20),
                    load_catalog(), detected=this_cpu_vm())
    assert rec.rests_on == ("own (advisor's built-in reference engine, not a production server); model llama-1b "
                            "(1.04B parameters, seeded random weights, by its name (advisor's preset llama-1b): speed "
                            "only, no quality claim); bf16; on NVIDIA H200 SXM 141GB; measured on recorded hardware (1 run)")
    assert rec.to_dict()["evidence_class"] == "measured on recorded hardware"
    host, single = rec.warnings[0], rec.warnings[1]
    assert host.startswith("the headline's run was host-bound (GPU busy 49% of the time") and "faster GPU" in host
    assert single.startswith("the headline rests on a single run")
    assert rec.to_dict()["rests_on"] == rec.rests_on and host in rec.to_dict()["warnings"]


def test_console_json_and_report_say_the_same(tmp_path):
    root = copy_runs(tmp_path, (CHAT,))
    out = CliRunner().invoke(cli, ["recommend", "--runs", str(root), "-s", "chat", "--peak-rps", "20"]).output
    assert "rests on: own (advisor's built-in reference engine" in " ".join(out.split())
    assert "Recommended: own serving llama-1b on NVIDIA H200" in " ".join(out.split())  # the model, in it
    doc = json.loads(CliRunner().invoke(cli, ["recommend", "--runs", str(root), "-s", "chat", "--peak-rps", "20",
                                              "--json"]).output)
    assert doc["rests_on"].startswith("own (advisor's built-in reference engine")
    report = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(root / CHAT), "-o", str(report)])
    assert res.exit_code == 0, res.output
    html = report.read_text()
    assert "Rests on: own (advisor&#39;s built-in reference engine" in html and "host-bound (GPU busy 49%" in html
    assert "<strong>own</strong> serving <strong>llama-1b</strong> on" in html


def test_a_run_made_on_this_machine_is_measured_here(tmp_path):
    from tests.advisor.recommend.h200 import THIS_FINGERPRINT, write_edited

    def made_here(d: dict) -> None:  # the chat run as if this machine had made it (same fingerprint)
        d["manifest"]["fingerprint"] = dict(THIS_FINGERPRINT)
        d["manifest"]["hardware"].update(gpus=[], cpu_cores=2)
        d["engine"]["device"] = "cpu"
        d["telemetry"].pop("gpu", None)

    write_edited(tmp_path, CHAT, "20261126-030000-chat-own-4e4e", made_here)
    rec = recommend(load(tmp_path), Constraints(scenario="chat", peak_rps=1), load_catalog(), detected=this_cpu_vm())
    row = next(r for r in rec.rows if r.candidate.source == "measured")
    assert row.candidate.evidence_class == "measured here" and row.candidate.hardware_id == "cpu-2core-vm"
