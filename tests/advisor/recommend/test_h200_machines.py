"""Which hardware the real H200 runs measured: fingerprints, never the hostname (issue 26, item 1)."""

from __future__ import annotations

import socket

import pytest

from advisor.catalog import load_catalog
from advisor.hardware.detect import map_machine, same_machine
from advisor.recommend import Constraints, recommend
from advisor.recommend.machines import resolve_runs
from tests.advisor.recommend.h200 import CHAT, THIS_FINGERPRINT, copy_runs, load, raw, this_cpu_vm, write_edited
from tests.advisor.recommend.runs import loaded, make_run


@pytest.fixture(autouse=True)
def _host_is_vm(monkeypatch):
    """This machine has the same hostname as the H200 the runs were made on."""
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")


def test_h200_runs_map_to_h200_although_this_host_is_also_vm(tmp_path):
    runs = load(copy_runs(tmp_path))
    assert {r.manifest["hostname"] for r in runs} == {socket.gethostname()}
    resolved = resolve_runs(runs, load_catalog(), this_cpu_vm())
    assert {mr.hardware.id for mr in resolved} == {"h200"}
    assert {mr.devices for mr in resolved} == {1}
    rec = recommend(runs, Constraints(scenario="chat", ttft_ms=800, peak_rps=20, budget_usd_month=20000),
                    load_catalog(), detected=this_cpu_vm())
    measured = [r for r in rec.rows if r.candidate.source == "measured"]
    assert [r.candidate.hardware_id for r in measured] == ["h200"]
    assert all(r.candidate.hardware_id != "cpu-2core-vm" or r.candidate.source == "estimated" for r in rec.rows)


def test_a_run_is_made_here_only_when_its_fingerprint_matches():
    det = this_cpu_vm()
    mine = make_run("mine", cpu_model="Intel(R) Xeon(R) Processor", cpu_cores=2, hostname="other-name")
    mine["manifest"]["fingerprint"] = dict(THIS_FINGERPRINT)
    twin = make_run("twin", cpu_model="Intel(R) Xeon(R) Processor", cpu_cores=2, hostname="vm")
    twin["manifest"]["fingerprint"] = {**THIS_FINGERPRINT, "machine_id_sha256": "cd" * 32}
    res = resolve_runs(loaded([mine, twin]), load_catalog(), det)
    assert res[0].hardware.measured  # this machine's entry, with its measured bandwidth
    assert res[0].hardware.memory_bw_gbps == 20.0
    assert not res[1].hardware.measured  # same hostname, another machine: the catalog entry
    # containers from one image share a machine-id: the GPU UUIDs still tell them apart
    a = {**THIS_FINGERPRINT, "gpu_uuids": ["GPU-1"]}
    assert not same_machine(a, {**a, "gpu_uuids": ["GPU-2"]})
    assert same_machine(a, dict(a))
    assert not same_machine({**a, "machine_id_sha256": None}, {**a, "machine_id_sha256": None})
    assert not same_machine(None, a)


def test_manifest_records_a_fingerprint_without_the_hostname():
    from advisor.run import manifest

    fp = manifest.collect()["fingerprint"]
    assert set(fp) == {"machine_id_sha256", "gpu_uuids", "cpu_model", "cpu_cores", "mem_gb", "gpus"}
    assert socket.gethostname() not in str(fp.values())


def test_unlisted_gpu_is_a_gpu_entry_with_no_peaks_and_nothing_estimated(tmp_path):
    def rename(d):
        d["manifest"]["hardware"]["gpus"] = [{"name": "NVIDIA Hopper-Next 999GB", "memory_gb": 999.0}]

    write_edited(tmp_path, CHAT, "unlisted-1", rename)
    runs = load(tmp_path)
    m = map_machine(runs[0].manifest["hardware"], load_catalog())
    assert m.hardware.kind == "gpu" and m.hardware.unlisted and m.hardware.peak_tflops(2) is None
    assert "unlisted GPU" in m.hardware.name
    rec = recommend(runs, Constraints(scenario="chat", ttft_ms=800, peak_rps=20), load_catalog(),
                    detected=this_cpu_vm())
    assert [r.candidate.source for r in rec.rows] == ["measured"]  # no roofline row from a part with no peaks
    row = rec.rows[0]
    assert row.candidate.hardware_id == m.hardware.id and row.monthly_usd is None and rec.best is None
    assert any("not in the hardware catalog" in n and "nothing is estimated" in n for n in rec.notes)
    assert any("not in the catalog, so no price" in f.detail for f in row.failures)


def test_eight_gpus_are_eight_devices_per_replica(tmp_path):
    def eight(d):
        d["manifest"]["hardware"]["gpus"] = [{"name": "NVIDIA H200", "memory_gb": 150.75}] * 8

    write_edited(tmp_path, CHAT, "eight-1", eight)
    rec = recommend(load(tmp_path), Constraints(scenario="chat", ttft_ms=800, peak_rps=20), load_catalog(),
                    detected=this_cpu_vm())
    row = next(r for r in rec.rows if r.candidate.source == "measured")
    assert row.candidate.hardware_id == "h200" and row.candidate.devices == 8
    assert row.monthly_usd == pytest.approx(8 * row.usd_per_hour * 730 * row.replicas)
    assert any("8 GPUs" in n for n in rec.notes)


def test_cpu_and_gpu_runs_of_one_engine_stay_apart(tmp_path):
    copy_runs(tmp_path, (CHAT,))
    cpu = make_run("cpu-1", engine="own", scenario="chat", cpu_model="Intel(R) Xeon(R) Processor", cpu_cores=2,
                   n_in=1176, n_out=218)
    cpu["schedule"]["effective"] = raw(CHAT)["schedule"]["effective"]  # the same workload as the GPU run
    from tests.advisor.recommend.runs import write_runs

    write_runs(tmp_path, [cpu])
    resolved = resolve_runs(load(tmp_path), load_catalog(), this_cpu_vm())
    by_id = {mr.run.run_id: mr.hardware.id for mr in resolved}
    assert by_id == {CHAT: "h200", "cpu-1": "cpu-2core-vm"}
    rec = recommend(load(tmp_path), Constraints(scenario="chat", ttft_ms=800, peak_rps=20), load_catalog(),
                    detected=this_cpu_vm())
    measured = {r.candidate.hardware_id: r.candidate.run_id for r in rec.rows if r.candidate.source == "measured"}
    assert measured == {"h200": CHAT, "cpu-2core-vm": "cpu-1"}
