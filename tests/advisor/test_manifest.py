"""What a run records of the machine's idle policy (advisor.manifest.cpu_idle), read from sysfs files."""

from __future__ import annotations

from advisor import manifest


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


def test_every_run_records_whether_it_ran_in_a_virtual_machine_and_its_idle_policy():
    hw = manifest.collect()["hardware"]
    assert isinstance(hw["virtual_machine"], bool) and "cpu_idle" in hw
