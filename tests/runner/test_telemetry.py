"""GPU telemetry bookkeeping (precision.telemetry), on a fake NVML: no GPU needed."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import pytest

from precision import telemetry
from precision.telemetry import PowerSampler, Sample, read_sample, summarize


def _fake_nvml(
    power_mw: int = 690_500, clock: int = 1650, temp: int = 61, reasons: int = 0x4
) -> SimpleNamespace:
    return SimpleNamespace(
        NVML_CLOCK_SM=1,
        NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetPowerUsage=lambda h: power_mw,
        nvmlDeviceGetClockInfo=lambda h, which: clock if which == 1 else -1,
        nvmlDeviceGetTemperature=lambda h, which: temp if which == 0 else -1,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: reasons,
    )


def test_read_sample_converts_units_and_reads_the_power_cap_bits() -> None:
    s = read_sample(_fake_nvml(), handle=None)
    assert (s.power_w, s.sm_clock_mhz, s.temperature_c, s.power_capped) == (
        690.5,
        1650.0,
        61.0,
        True,
    )
    assert read_sample(_fake_nvml(reasons=0x80), None).power_capped  # hardware power brake
    assert not read_sample(_fake_nvml(reasons=0x1 | 0x40), None).power_capped  # idle, thermal


def test_summarize_means_peak_fraction_and_energy_per_flop() -> None:
    samples = [Sample(700.0, 1600.0, 60.0, True, 10.0), Sample(680.0, 1700.0, 62.0, False, 12.0)]
    out = summarize(samples, seconds_per_call=0.01, flops_per_call=1e12)
    assert out["power_w"] == 690.0
    assert out["sm_clock_mhz"] == 1650.0
    assert out["temp_c_max"] == 62.0
    assert out["power_capped_frac"] == 0.5
    # 690 W x 10 ms = 6.9 J over 1e12 flops = 6.9 pJ per flop
    assert out["pj_per_flop"] == pytest.approx(6.9)
    assert math.isnan(summarize(samples)["pj_per_flop"])  # no timing given


def test_windows_shorter_than_nvml_power_averaging_get_no_power() -> None:
    # 0.5 s of samples: NVML's one-second board-power average still holds the second before
    samples = [Sample(150.0, 1980.0, 40.0, False, 3.0), Sample(160.0, 1980.0, 41.0, False, 3.5)]
    out = summarize(samples, 0.007, 1.1e12)
    assert math.isnan(out["power_w"]) and math.isnan(out["pj_per_flop"])
    assert out["sm_clock_mhz"] == 1980.0 and out["temp_c_max"] == 41.0


def test_summarize_without_samples_is_all_nan() -> None:
    out = summarize([], 0.01, 1e12)
    assert set(out) == {"power_w", "sm_clock_mhz", "temp_c_max", "power_capped_frac", "pj_per_flop"}
    assert all(math.isnan(v) for v in out.values())


def test_sampler_without_nvml_records_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "_nvml_handle", lambda index: None)
    with PowerSampler(interval_s=0.001) as sampler:
        pass
    assert not sampler.available
    assert sampler.samples == []


def test_sampler_polls_while_open(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "_nvml_handle", lambda index: (_fake_nvml(), object()))
    with PowerSampler(interval_s=0.001) as sampler:
        time.sleep(0.2)  # 200 polls due: at least one lands, also on a loaded machine
    assert sampler.available
    assert len(sampler.samples) >= 3  # entry, polls, exit
    assert all(s.power_w == 690.5 for s in sampler.samples)


def test_sampler_stops_on_an_unsupported_query(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(h: object) -> int:
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    nvml = _fake_nvml()
    nvml.nvmlDeviceGetCurrentClocksEventReasons = broken
    monkeypatch.setattr(telemetry, "_nvml_handle", lambda index: (nvml, object()))
    with PowerSampler(interval_s=0.001) as sampler:
        pass
    assert sampler.samples == [] and not sampler.available


def test_bench_gemm_takes_sustained_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from precision.runner.commands import bench_gemm

    parser = argparse.ArgumentParser()
    bench_gemm.register(parser.add_subparsers())
    args = parser.parse_args(["bench-gemm", "--sustained", "4"])
    assert args.sustained == 4.0
    assert bench_gemm.run(parser.parse_args(["bench-gemm", "--sustained", "-1"])) == 2
    assert "error: --sustained -1.0: expected seconds >= 0" in capsys.readouterr().err


def test_time_gpu_sampled_samples_the_timed_calls_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from precision import gpu

    calls: list[tuple[int, int, float, int]] = []

    def fake_time_gpu(fn, *, repeats, warmup, min_seconds=0.0, batch=1):  # noqa: ANN001, ANN202
        calls.append((repeats, warmup, min_seconds, len(sampled)))
        return [0.5] * repeats

    sampled: list[object] = []
    nvml = _fake_nvml()
    reading = nvml.nvmlDeviceGetPowerUsage
    nvml.nvmlDeviceGetPowerUsage = lambda h: sampled.append(h) or reading(h)
    monkeypatch.setattr(gpu, "time_gpu", fake_time_gpu)
    monkeypatch.setattr(telemetry, "_nvml_handle", lambda index: (nvml, object()))
    times, samples = telemetry.time_gpu_sampled(lambda: None, repeats=3, warmup=2, min_seconds=1.5)
    assert times == [0.5, 0.5, 0.5]
    # the warm-up first, before any sample; the timed calls after the sampler's first sample
    assert calls == [(0, 2, 0.0, 0), (3, 0, 1.5, 1)]
    assert len(samples) == len(sampled) >= 2


class _FakeClockCupy:
    """Just enough of CuPy for time_gpu / calls_per_sample: a device clock that each call of
    the timed function advances by ``cost`` seconds, events that read it; ``calls`` counts
    the calls."""

    def __init__(self, cost: float) -> None:
        self.now = 0.0
        self.cost = cost
        self.calls = 0
        fake = self

        class Event:
            def record(self) -> None:
                self.t = fake.now

            def synchronize(self) -> None:
                pass

        class Device:
            def synchronize(self) -> None:
                pass

        self.cuda = type(
            "cuda",
            (),
            {
                "Event": Event,
                "Device": Device,
                "get_elapsed_time": staticmethod(lambda a, b: (b.t - a.t) * 1e3),  # ms
            },
        )

    def call(self) -> None:
        self.calls += 1
        self.now += self.cost


def test_time_gpu_batches_calls_between_one_pair_of_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from precision import gpu

    fake = _FakeClockCupy(cost=50e-6)
    monkeypatch.setattr(gpu, "require_gpu", lambda what: fake)
    times = gpu.time_gpu(fake.call, repeats=4, warmup=2, batch=8)
    assert fake.calls == 2 + 4 * 8
    assert times == pytest.approx([50e-6] * 4)
    with pytest.raises(ValueError, match="batch must be >= 1, got 0"):
        gpu.time_gpu(fake.call, batch=0)


@pytest.mark.parametrize(
    ("cost", "expected"), [(50e-6, 40), (3e-3, 1), (2e-3, 1), (1.5e-6, 1000), (0.0, 1000)]
)
def test_calls_per_sample_fills_about_two_milliseconds(
    monkeypatch: pytest.MonkeyPatch, cost: float, expected: int
) -> None:
    from precision import gpu

    fake = _FakeClockCupy(cost)
    monkeypatch.setattr(gpu, "require_gpu", lambda what: fake)
    assert gpu.calls_per_sample(fake.call) == expected


def test_calls_per_sample_warms_up_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from precision import gpu

    fake = _FakeClockCupy(cost=1e-3)
    monkeypatch.setattr(gpu, "require_gpu", lambda what: fake)
    assert gpu.calls_per_sample(fake.call, warmup=2) == 2
    assert fake.calls == 3  # two untimed, one timed
