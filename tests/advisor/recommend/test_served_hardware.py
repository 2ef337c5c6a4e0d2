"""A served engine is sized on the server's declared hardware, or on nothing (issue 26, item 5)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
from tests.advisor.recommend.h200 import this_cpu_vm
from tests.advisor.recommend.runs import loaded, make_run


def served_run(server_hardware=None):
    r = make_run("served-1", engine="openai", rps=4.0, ttft_ms=300, tpot_ms=40, cpu_model="Laptop CPU", cpu_cores=2,
                 precision="unknown", hostname="vm")
    r["engine"].update({"format": "server", "device": "http://gpu-box.example.internal:8000"})
    if server_hardware:
        r["manifest"]["server_hardware"] = server_hardware
    return r


def test_openai_run_without_server_hardware_sizes_and_prices_nothing():
    rec = recommend(loaded([served_run()]), Constraints(peak_rps=20), load_catalog(), detected=this_cpu_vm())
    assert rec.best is None
    [row] = rec.rows  # no estimate either: the engine behind an endpoint is unknown
    assert row.candidate.hardware_id == "unknown hardware"
    assert row.replicas is None and row.monthly_usd is None
    assert any(f.constraint == "hardware" and "--server-hardware" in f.would_have_to_give for f in row.failures)
    assert any("gpu-box.example.internal" in n and "--server-hardware" in n for n in rec.notes)


def test_openai_run_with_declared_h100_is_priced_as_one():
    cat = load_catalog()
    decl = {"id": "h100-sxm", "count": 2, "where": "rack 4", "declared_by": "--server-hardware"}
    rec = recommend(loaded([served_run(decl)]), Constraints(peak_rps=20), cat, detected=this_cpu_vm())
    row = rec.rows[0]
    assert row.candidate.hardware_id == "h100-sxm" and row.candidate.devices == 2
    price = cat.price("h100-sxm", "cloud_on_demand").usd_per_hour
    assert row.replicas == 6  # ceil(20 x 1.2 / 4)
    assert row.monthly_usd == pytest.approx(price * 2 * 6 * 730)
    assert rec.best is not None and rec.best.candidate.hardware_id == "h100-sxm"


def test_unknown_server_hardware_id_lists_the_valid_ones():
    from advisor_cli import cli

    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", "--engine", "openai", "--url", "http://127.0.0.1:9",
                                   "--server-hardware", "h100-sxxm"])
    assert res.exit_code == 2
    assert "unknown --server-hardware 'h100-sxxm'; valid ids:" in res.output and "h100-sxm" in res.output
    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", "--engine", "own", "--server-hardware", "h100-sxm"])
    assert res.exit_code == 2 and "for a served engine" in res.output


def test_the_declaration_goes_into_the_manifest():
    from advisor.run import manifest
    from advisor_cli.options import bench_config

    cfg = bench_config(scenario="chat", engine="openai", model=None, opts=(), threads=None, device=None,
                       url="http://127.0.0.1:9", launch=None, out_dir=".", timeout_s=10.0,
                       server_hardware="h100-sxm", server_hardware_count=8, server_where="dc-1")
    assert cfg.server_hardware == {"id": "h100-sxm", "count": 8, "where": "dc-1", "declared_by": "--server-hardware"}
    assert manifest.collect(cfg.server_hardware)["server_hardware"]["count"] == 8
    assert "server_hardware" not in manifest.collect()
