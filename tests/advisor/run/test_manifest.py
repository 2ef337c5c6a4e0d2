"""What a run records of the machine's idle policy (advisor.run.manifest.cpu_idle), read from sysfs files."""

from __future__ import annotations

from advisor.run import manifest


def test_cpu_idle_reads_the_driver_governor_and_a_guests_polling_window(tmp_path):
    idle = tmp_path / "cpuidle"
    idle.mkdir()
    (idle / "current_driver").write_text("haltpoll\n")
    (idle / "current_governor_ro").write_text("haltpoll\n")  # older kernels name it so
    knob = tmp_path / "guest_halt_poll_ns"
    knob.write_text("0\n")
    assert manifest.cpu_idle(str(idle), str(knob)) == {"driver": "haltpoll", "governor": "haltpoll",
                                                        "guest_halt_poll_ns": 0}
    knob.unlink()  # not a KVM guest with the haltpoll driver: no window to report
    (idle / "current_driver").write_text("intel_idle\n")
    (idle / "current_governor").write_text("menu\n")
    assert manifest.cpu_idle(str(idle), str(knob)) == {"driver": "intel_idle", "governor": "menu"}


def test_cpu_idle_is_none_where_linux_does_not_say(tmp_path):
    assert manifest.cpu_idle(str(tmp_path / "none"), str(tmp_path / "none")) is None


def test_every_run_records_whether_the_cpu_says_it_runs_under_a_hypervisor(monkeypatch):
    hw = manifest.collect()["hardware"]
    assert hw["cpu_idle"] == manifest.cpu_idle()
    flags = manifest._cpuinfo("flags")
    assert hw["virtual_machine"] == (None if flags is None else "hypervisor" in flags.split())
    monkeypatch.setattr(manifest, "_cpuinfo", lambda field: "fpu vme hypervisor avx512f" if field == "flags" else None)
    assert manifest._virtual_machine() is True
    monkeypatch.setattr(manifest, "_cpuinfo", lambda field: "fpu vme avx512f" if field == "flags" else None)
    assert manifest._virtual_machine() is False
    monkeypatch.setattr(manifest, "_cpuinfo", lambda field: None)  # an ARM CPU lists "Features", not "flags"
    assert manifest._virtual_machine() is None
