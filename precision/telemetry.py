"""What the GPU was doing while a benchmark ran: board power, SM clock, temperature, power cap.

A tensor-core GEMM can run the card into its power limit (the H200 at 700 W), after which the
driver lowers the SM clock and the speed of a kernel depends on how warm the card is and on what
ran before it. Benchmarks therefore record the card's state next to each timing, so a reader can
tell a burst figure from a power-capped one, and energy per flop (mean board power x time /
flops) compares kernels independently of the clock they happened to get.

NVML is read through ``pynvml`` (the ``nvidia-ml-py`` package, part of ``precision[gpu]``). A
:class:`PowerSampler` polls it on a background thread; without ``pynvml`` or an NVIDIA driver it
records nothing and :func:`summarize` returns NaN fields, so a benchmark never fails for lack of
telemetry.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

#: NVML's board power on Ampere and newer GPUs (the H200 included) is an average over the last
#: second (NVML API reference, nvmlDeviceGetPowerUsage), so a window shorter than this does not
#: get its own power: :func:`summarize` leaves power and energy NaN for it
POWER_AVERAGING_S = 1.0

#: NVML clock-event reason bits that mean "held back by power" (software power cap, hardware
#: power brake): nvmlClocksEventReasonSwPowerCap 0x4, nvmlClocksEventReasonHwPowerBrakeSlowdown
#: 0x80
POWER_CAP_REASONS = 0x4 | 0x80


@dataclass(frozen=True)
class Sample:
    """One NVML reading: board power (W, a one-second average), SM clock (MHz), GPU temperature
    (deg C), whether a power-cap clock-event reason was active, and when (``time.perf_counter``
    seconds)."""

    power_w: float
    sm_clock_mhz: float
    temperature_c: float
    power_capped: bool
    t_s: float = 0.0


def _nvml_handle(device_index: int) -> tuple[Any, Any] | None:
    """(pynvml module, device handle), or ``None`` when NVML is not usable here."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(device_index)
    except Exception:  # no package, no driver, no device
        return None


def read_sample(nvml: Any, handle: Any) -> Sample:
    """One reading of the device behind ``handle`` (``nvml``: the pynvml module)."""
    return Sample(
        power_w=nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,  # milliwatts
        sm_clock_mhz=float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
        temperature_c=float(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
        power_capped=bool(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle) & POWER_CAP_REASONS),
        t_s=time.perf_counter(),
    )


class PowerSampler:
    """Polls NVML every ``interval_s`` seconds on a background thread while in its ``with``
    block; :attr:`samples` holds the readings. NVML updates board power about every 20-100 ms,
    so windows shorter than that get one or two samples; one sample is always taken at entry
    and at exit."""

    def __init__(self, interval_s: float = 0.02, device_index: int = 0) -> None:
        self.interval_s = interval_s
        self.samples: list[Sample] = []
        self._nvml = _nvml_handle(device_index)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        """Whether NVML could be opened (otherwise nothing is recorded)."""
        return self._nvml is not None

    def _take(self) -> None:
        if self._nvml is not None:
            try:
                self.samples.append(read_sample(*self._nvml))
            except Exception:  # a query the driver does not support: stop sampling
                self._nvml = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._take()

    def __enter__(self) -> PowerSampler:
        self.samples = []
        self._take()
        if self._nvml is not None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        self._take()


def time_gpu_sampled(
    fn: Callable[[], object],
    *,
    repeats: int,
    warmup: int,
    min_seconds: float = 0.0,
    batch: int = 1,
) -> tuple[list[float], list[Sample]]:
    """``precision.gpu.time_gpu`` with the card sampled during the timed calls only: the
    ``warmup`` calls run first, outside the sampler. Returns (seconds per call, samples)."""
    from precision.gpu import time_gpu

    time_gpu(fn, repeats=0, warmup=warmup)
    with PowerSampler() as sampler:
        times = time_gpu(fn, repeats=repeats, warmup=0, min_seconds=min_seconds, batch=batch)
    return times, sampler.samples


def summarize(
    samples: list[Sample],
    seconds_per_call: float | None = None,
    flops_per_call: float | None = None,
) -> dict[str, float]:
    """Mean board power (W), mean SM clock (MHz), peak temperature (deg C), the fraction of
    samples with a power-cap reason active and, given a call's time and useful flops, energy per
    useful flop in picojoules (mean power x time / flops). NaN fields when there are no
    samples; power and energy also NaN when the samples span less than
    :data:`POWER_AVERAGING_S` (the board power would still be that of the second before)."""
    nan = math.nan
    if not samples:
        return {
            "power_w": nan,
            "sm_clock_mhz": nan,
            "temp_c_max": nan,
            "power_capped_frac": nan,
            "pj_per_flop": nan,
        }
    n = len(samples)
    power = sum(s.power_w for s in samples) / n
    if samples[-1].t_s - samples[0].t_s < POWER_AVERAGING_S:
        power = nan
    out = {
        "power_w": power,
        "sm_clock_mhz": sum(s.sm_clock_mhz for s in samples) / n,
        "temp_c_max": max(s.temperature_c for s in samples),
        "power_capped_frac": sum(s.power_capped for s in samples) / n,
        "pj_per_flop": nan,
    }
    if seconds_per_call is not None and flops_per_call and not math.isnan(power):
        out["pj_per_flop"] = power * seconds_per_call / flops_per_call * 1e12
    return out
