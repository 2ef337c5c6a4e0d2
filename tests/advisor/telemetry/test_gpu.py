"""GPU telemetry: "n/a" with the reason when there is no GPU; energy from the counter, never guessed."""

from __future__ import annotations

import sys
import types

import pytest

from adapters import gpus
from advisor.telemetry import gpu as gpu_mod
from advisor.telemetry.gpu import GpuSampler


class _NVMLError(Exception):
    pass


class _NotSupported(_NVMLError):
    pass


def _fake_nvml(*, count: int = 1, energy: bool = True, driver: bool = True) -> types.SimpleNamespace:
    """An NVML stand-in: 100 W, energy counter advancing 100 J per call, 1 GiB more memory per call."""
    state = {"energy_mj": 1_000_000.0, "mem": 0}

    def init() -> None:
        if not driver:
            raise _NVMLError("Driver Not Loaded")

    def energy_read(h: object) -> float:
        if not energy:
            raise _NotSupported("Not Supported")
        state["energy_mj"] += 100_000.0
        return state["energy_mj"]

    def mem(h: object) -> types.SimpleNamespace:
        state["mem"] += 1
        return types.SimpleNamespace(used=state["mem"] * 2**30, total=80 * 2**30)

    return types.SimpleNamespace(
        NVMLError=_NVMLError, NVMLError_NotSupported=_NotSupported, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2,
        nvmlInit=init, nvmlShutdown=lambda: None, nvmlDeviceGetCount=lambda: count,
        nvmlDeviceGetHandleByIndex=lambda i: object(), nvmlDeviceGetName=lambda h: b"Fake GPU",
        nvmlDeviceGetMemoryInfo=mem, nvmlDeviceGetPowerUsage=lambda h: 100_000,
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=50),
        nvmlDeviceGetClockInfo=lambda h, kind: 1500 if kind == 1 else 2600,
        nvmlDeviceGetTotalEnergyConsumption=energy_read)


def test_this_machine_says_why_there_is_no_gpu_or_samples_it():
    why = GpuSampler.probe()
    if why is None:  # a real GPU: sample it for real
        s = GpuSampler()
        assert s.sample()["memory_used_mb"] > 0
        s.close()
        return
    assert any(w in why for w in ("pynvml not installed", "no NVIDIA driver", "no GPU")), why
    with pytest.raises(RuntimeError, match="GPU telemetry unavailable"):
        GpuSampler()
    na = GpuSampler.unavailable_summary(why)
    assert na["gpu"].startswith("n/a") and na["energy_j"] is None and na["j_per_output_token"] is None


def test_missing_pynvml_is_reported(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    assert GpuSampler.probe() == "pynvml not installed (pip install nvidia-ml-py)"


@pytest.mark.parametrize(("fake", "reason"), [
    (_fake_nvml(driver=False), "no NVIDIA driver"), (_fake_nvml(count=0), "no GPU"), (_fake_nvml(count=1), None)])
def test_probe_reasons(monkeypatch, fake, reason):
    monkeypatch.setattr(gpus, "nvml", lambda: fake)
    why = GpuSampler.probe()
    assert (why is None) if reason is None else why.startswith(reason)


def test_energy_per_token_is_the_counter_difference(monkeypatch):
    monkeypatch.setattr(gpus, "nvml", lambda: _fake_nvml())
    s = GpuSampler()
    for _ in range(5):
        s.sample()
    s.samples = [(float(i), v) for i, (_, v) in enumerate(s.samples)]  # samples at t = 0..4 s
    summ = s.summary(n_output_tokens=1000, window=(1.0, 3.0))
    assert summ["energy_j"] == pytest.approx(200.0)  # counter +100 J per sample, 2 s window
    assert summ["j_per_output_token"] == pytest.approx(0.2)
    assert summ["power_w_mean"] == 100 and summ["util_pct_mean"] == 50 and summ["sm_clock_mhz_mean"] == 1500
    assert summ["memory_used_peak_mb"] == s.samples[3][1]["memory_used_mb"]  # the peak inside the window, not after
    half = s.summary(n_output_tokens=10, window=(1.5, 2.0))
    assert half["energy_j"] == pytest.approx(50.0)  # linear between samples


def test_no_energy_counter_gives_none_not_a_guess(monkeypatch):
    monkeypatch.setattr(gpus, "nvml", lambda: _fake_nvml(energy=False))
    s = GpuSampler()
    s.sample()
    s.sample()
    summ = s.summary(n_output_tokens=100)
    assert summ["energy_j"] is None and summ["j_per_output_token"] is None
    assert "no energy counter" in summ["energy_note"] and summ["power_w_mean"] == 100


@pytest.mark.gpu
def test_real_gpu_energy_counter_advances_under_sampling():
    if GpuSampler.probe() is not None:
        pytest.skip(GpuSampler.probe())
    import time

    s = GpuSampler()
    s.sample()
    time.sleep(1.0)
    s.sample()
    summ = s.summary(n_output_tokens=1)
    s.close()
    assert summ["power_w_mean"] > 0 and summ["memory_total_mb"] > 0
    if s.energy_supported:
        assert summ["energy_j"] > 0


def test_the_gpu_sampled_is_the_one_this_process_was_given(monkeypatch):
    fake = _fake_nvml(count=4)
    fake.nvmlDeviceGetHandleByIndex = lambda i: i
    fake.nvmlDeviceGetUUID = lambda h: f"GPU-{h}aaa".encode()
    monkeypatch.setattr(gpus, "nvml", lambda: fake)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpu_mod.visible_device_index() == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert gpu_mod.visible_device_index() == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-3aaa")  # Ray and Kubernetes may hand out UUIDs
    assert gpu_mod.visible_device_index() == 3
