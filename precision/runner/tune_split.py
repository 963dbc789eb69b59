"""Time build variants of the corrected (split) wgmma kernels on a GPU.

``gemm_wgmma.cu`` exposes its tuning knobs as macros ``WG_SPLIT_<KNOB>``: ``SLOTS16``,
``SLOTS32`` (shared-memory ring slots), ``SLACK`` (ring slots not fetched ahead),
``UNROLL_B16``/``UNROLL_B32`` (producer loop unrolling), ``PRODUCER_REGS16``/``PRODUCER_REGS32``
(producer registers). This tool builds one cubin per variant with ``-D`` flags, times each
kernel on n x n x n uniform(-1, 1) inputs (CUDA events, median of ``--repeats`` launches per
round, kernel only: the inputs are already padded fp32 device arrays; ``--rounds`` passes
interleave the variants, since the clock drifts under the power cap) and checks whether every
variant's output has the same bits as the first variant's. Each line also gives the card's mean
board power, mean SM clock and energy per flop during the timed launches
(``precision.telemetry``; median over rounds; power and energy only when a round's launches span
a second, e.g. ``--repeats 150`` at n = 8192): at the power cap, energy per flop is what decides
the speed. ``err_fro`` is the output's relative Frobenius error against a float64 GEMM of the
same fp32 inputs. The tuning knobs change the speed, never the schedule;
``TBLOCK16``/``TBLOCK32`` (k-stages per Ootomo k-block) do change it, and the kernels' values
must match ``precision/gemm/schedule.py``. A developer tool; the benchmark of record is
``precision bench-gemm``.

    python -m precision.runner.tune_split --n 8192 --rounds 5 --variant '' --variant SLOTS32=5
"""

from __future__ import annotations

import argparse
import functools

from precision.console import run_main

KNOBS = (
    "SLOTS16",
    "SLOTS32",
    "SLACK",
    "TBLOCK16",
    "TBLOCK32",
    "UNROLL_B16",
    "UNROLL_B32",
    "PRODUCER_REGS16",
    "PRODUCER_REGS32",
    "RASTER_GROUP",
    "CLAMP_TOP",
)
DEFAULT_KERNELS = ("wg_ootomo_f16", "wg_ootomo_tf32")


def parse_variant(text: str) -> dict[str, int]:
    """``"SLOTS16=3,PRODUCER_REGS16=32"`` -> {"SLOTS16": 3, "PRODUCER_REGS16": 32}; unknown
    knobs are an error."""
    out: dict[str, int] = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        if key not in KNOBS or not value.lstrip("-").isdigit():
            raise SystemExit(f"--variant {text!r}: expected KNOB=INT with KNOB in {KNOBS}")
        out[key] = int(value)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m precision.runner.tune_split",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--n", type=int, default=8192)
    p.add_argument(
        "--variant",
        action="append",
        default=None,
        help="KNOB=INT[,KNOB=INT...]; '' is the defaults (repeatable)",
    )
    p.add_argument("--kernel", action="append", default=None)
    p.add_argument("--repeats", type=int, default=10, help="timed launches per round")
    p.add_argument(
        "--rounds", type=int, default=1, help="passes over all variants, interleaved (default 1)"
    )
    args = p.parse_args(argv)
    variants = [parse_variant(v) for v in (args.variant or [""])]  # bad knobs: before any work
    n = args.n
    if n % 128:
        raise SystemExit(f"--n {n}: must be a multiple of 128 (no padding here)")
    from precision.gpu import exit_without_gpu

    if exit_without_gpu("python -m precision.runner.tune_split"):
        return 2

    import cupy as cp
    import numpy as np

    from precision.gemm.schedule import all_schedules
    from precision.kernels.build import build_cubin
    from precision.kernels.launch import (
        WG_SPLIT_SLOTS,
        WG_SPLIT_THREADS,
        split_smem_bytes,
        split_tensor_maps,
    )
    from precision.kernels.specs import kernel_spec
    from precision.telemetry import summarize, time_gpu_sampled

    kernels = args.kernel or list(DEFAULT_KERNELS)
    schedules = {s.kernel: s for s in all_schedules()}
    rng = np.random.default_rng(0)
    A = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    B = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    exact = A.astype(cp.float64) @ B.astype(cp.float64)  # err_fro's reference (float64 GEMM)
    first_out: dict[str, object] = {}  # each kernel's output bits under the first variant
    verdict: dict[tuple[int, str], str] = {}  # reference / identical / DIFFERENT to those
    err_fro: dict[tuple[int, str], float] = {}
    modules = []
    for knobs in variants:  # build everything first: the timing rounds then run back to back
        flags = tuple(
            f"-DWG_{k}={v}" if k == "RASTER_GROUP" else f"-DWG_SPLIT_{k}={v}"
            for k, v in knobs.items()
        )
        modules.append(
            cp.RawModule(path=str(build_cubin("gemm_wgmma.cu", arch="sm_90a", extra_flags=flags)))
        )
    # round medians per (variant, kernel); rounds interleave the variants, so a drift of the
    # clocks (the H200 runs at its power cap under these kernels) hits every variant alike
    medians: dict[tuple[int, str], list[float]] = {}
    states: dict[tuple[int, str], list[dict[str, float]]] = {}  # telemetry per round
    for _ in range(args.rounds):
        for v, (knobs, module) in enumerate(zip(variants, modules, strict=True)):
            for name in kernels:
                split = schedules[name].split
                s = split.lo_scale_log2 if split else 0
                fn = module.get_function(name)
                fmt = kernel_spec(name).fmt
                bits = "32" if fmt == "tf32" else "16"
                smem = split_smem_bytes(fmt, knobs.get("SLOTS" + bits, WG_SPLIT_SLOTS[fmt]))
                fn.max_dynamic_shared_size_bytes = smem
                D = cp.empty((n, n), dtype=cp.float32)
                launch_args = (
                    split_tensor_maps(fmt, A, B),
                    D,
                    cp.int32(n),
                    cp.int32(n),
                    cp.int32(n),
                    cp.float32(2.0**s),
                    cp.float32(2.0**-s),
                    # the flag argument: the non-finite output flag, except in the clamping
                    # build (CLAMP_TOP=1), where it is the gate launch.py sets only when an
                    # input needs the clamp; set here, so that the build runs and is timed
                    cp.full(1, int(bool(knobs.get("CLAMP_TOP", 0))), dtype=cp.int32),
                )
                launch = functools.partial(
                    fn, ((n // 128) ** 2,), (WG_SPLIT_THREADS,), launch_args, shared_mem=smem
                )
                times, samples = time_gpu_sampled(launch, repeats=args.repeats, warmup=2)
                t = float(np.median(times))
                key = (v, name)
                medians.setdefault(key, []).append(t)
                states.setdefault(key, []).append(summarize(samples, t, 2.0 * n**3))
                if key not in verdict:  # first round: error and bits
                    err_fro[key] = float(
                        cp.linalg.norm(D.astype(cp.float64) - exact) / cp.linalg.norm(exact)
                    )
                    out = D.view(cp.uint32)
                    if v == 0:
                        first_out[name] = out.copy()
                        verdict[key] = "reference"
                    else:
                        verdict[key] = (
                            "identical"
                            if bool(cp.array_equal(out, first_out[name]))
                            else "DIFFERENT"
                        )
    print(
        f"n={n}  TFLOP/s = 2 n^3 / median kernel time; median of {args.rounds} round(s) "
        f"[slowest .. fastest round]"
    )
    for v, knobs in enumerate(variants):
        for name in kernels:
            rates = sorted(2 * n**3 / t / 1e12 for t in medians[(v, name)])
            label = ",".join(f"{k}={x}" for k, x in knobs.items()) or "defaults"
            state = {
                k: float(np.median([s[k] for s in states[(v, name)]]))
                for k in ("power_w", "sm_clock_mhz", "pj_per_flop")
            }
            print(
                f"{name:16s} {label:40s} {float(np.median(rates)):7.1f} TFLOP/s "
                f"[{rates[0]:6.1f} .. {rates[-1]:6.1f}]  {state['power_w']:4.0f} W "
                f"{state['sm_clock_mhz']:5.0f} MHz {state['pj_per_flop']:5.2f} pJ/flop  "
                f"err_fro {err_fro[(v, name)]:.3e}  {verdict[(v, name)]}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    run_main(main)
