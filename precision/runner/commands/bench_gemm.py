"""``precision bench-gemm``: our CUDA GEMM kernels and cuBLAS baselines, in one process.

Writes one row per (distribution, n, method, format, correction, backend) with TFLOP/s (2·n³
useful flops over the median time of a whole call from fp32 device inputs, conversions
included; CUDA events around samples of ``calls_per_sample`` calls back to back, about 2 ms
each, as in the runner: :func:`precision.gpu.calls_per_sample`) and the relative Frobenius /
max elementwise error against a reference product (``precision.reference.exact_matmul``
when available, else a float64 GEMM, named in the ``reference`` column), plus provenance
columns.

The card's state during the timed calls goes next to each timing (``precision.telemetry``):
mean board power, mean SM clock, peak temperature, the fraction of NVML samples with the power
cap active, and energy per useful flop (pJ). A short run from a cool card is a burst figure;
``--sustained S`` adds, at the largest size, a steady-state figure: calls back to back for S
seconds, median and telemetry over the second half (``*_sustained`` columns), which is what a
power-capped card delivers on long work.

The CSV goes to a new ``results/bench/gemm_<gpu-model>_<host>_<YYYYmmdd-HHMMSS>.csv`` (e.g.
``gemm_nvidia-h200_node3_20260101-120000.csv``) unless ``--out`` is given; a file tracked by
git is refused. Without a GPU the command stops with one line (exit 2).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

#: (method, fmt, correction, backend) rows of the default benchmark.
DEFAULT_CONFIGS: tuple[tuple[str, str, str | None, str], ...] = (
    ("plain", "fp32", None, "cublas"),
    ("plain", "tf32", None, "cublas"),
    ("plain", "fp16", None, "cublas"),
    ("plain", "bf16", None, "cublas"),
    ("corrected", "fp16", "ootomo", "cublas"),
    ("plain", "fp16", None, "cuda"),
    ("plain", "bf16", None, "cuda"),
    ("plain", "tf32", None, "cuda"),
    ("plain", "e4m3", None, "cuda"),
    ("satf", "fp16", None, "cuda"),
    ("satf", "tf32", None, "cuda"),
    ("corrected", "fp16", "ootomo", "cuda"),
    ("corrected", "bf16", "ootomo", "cuda"),
    ("corrected", "tf32", "ootomo", "cuda"),
    ("corrected", "fp16", "markidis", "cuda"),
    ("corrected", "tf32", "markidis", "cuda"),
)


def _reference(cp, A, B):
    """(reference product as float64 numpy, its name): the exact product rounded once to
    float64 (``exact_fp64``), computed on the GPU. Inputs it refuses (non-finite values) get a
    float64 GEMM instead (``dgemm_fp64``, error ~1e-16 relative), named as such in the rows.
    (Until 2026-11-26 a NumPy conversion of the CuPy result failed here and every row fell back
    to ``dgemm_fp64`` silently; the rows' ``reference`` column always said which was used.)"""
    from precision.reference import exact_matmul

    try:
        exact = exact_matmul(A, B, rounding="fp64", device="gpu")
    except ValueError:
        return cp.asnumpy(cp.asarray(A, cp.float64) @ cp.asarray(B, cp.float64)), "dgemm_fp64"
    return cp.asnumpy(exact), "exact_fp64"


def _runner(cp, method, fmt, correction, backend, Ad, Bd):
    if backend == "cuda":
        from precision.gemm import cuda_gemm, get_schedule

        s = get_schedule(method, fmt, correction)
        return lambda: cuda_gemm(Ad, Bd, s)
    from precision.gemm.api import cublas_mode
    from precision.vendor.cublas import cublas_gemm

    mode = cublas_mode(method, fmt, correction)
    return lambda: cublas_gemm(Ad, Bd, mode=mode)


def _kernel_name(method: str, fmt: str, correction: str | None, backend: str) -> str:
    """Our kernel's entry point (``wg_*``: wgmma, ``gemm_*``: mma.sync) or ``cublas:<mode>``."""
    if backend == "cuda":
        from precision.gemm import get_schedule

        return get_schedule(method, fmt, correction).kernel
    from precision.gemm.api import cublas_mode

    return f"cublas:{cublas_mode(method, fmt, correction)}"


def _sustained(fn, flops: float, seconds: float, repeats: int) -> dict[str, float]:
    """Steady state: ``fn`` back to back for ``seconds``; TFLOP/s from the median of the second
    half of the calls, telemetry from the second half of the samples."""
    from precision.telemetry import summarize, time_gpu_sampled

    times, samples = time_gpu_sampled(fn, repeats=repeats, warmup=0, min_seconds=seconds)
    t = statistics.median(times[len(times) // 2 :])
    tel = summarize(samples[len(samples) // 2 :], t, flops)
    return {
        "tflops_sustained": flops / t / 1e12,
        "sustained_calls": len(times),
        "sustained_s": sum(times),
        **{f"{k}_sustained": v for k, v in tel.items()},
    }


def run(args: argparse.Namespace) -> int:
    import sys

    import pandas as pd
    from tqdm.auto import tqdm

    from precision.console import file_destination_problem
    from precision.distributions import make_inputs
    from precision.gpu import calls_per_sample, device_name, exit_without_gpu, require_gpu
    from precision.metrics import error_metrics
    from precision.provenance import collect
    from precision.runner.bench_output import check_out, default_path
    from precision.runner.store import claim_new
    from precision.telemetry import summarize, time_gpu_sampled

    if args.sustained < 0:
        print(f"error: --sustained {args.sustained}: expected seconds >= 0", file=sys.stderr)
        return 2
    if exit_without_gpu("precision bench-gemm"):
        return 2
    cp = require_gpu("precision bench-gemm")
    out = Path(args.out) if args.out else default_path("gemm", device_name() or "gpu")
    problem = check_out(out) or file_destination_problem(out, "--out")
    if problem:  # before the measurements: their rows would have nowhere to go
        print(f"error: {problem}", file=sys.stderr)
        return 2
    prov = collect(seed=args.seed)
    rows = []
    dists: list[tuple[str, dict[str, float]]] = [("uniform", {})] + [
        ("exp_rand", {"phi": phi}) for phi in args.phi
    ]
    cases = [
        (dist, params, n)
        for dist, params in dists
        for n in (
            args.sizes if dist == "uniform" else [n for n in args.sizes if n <= args.max_n_exp]
        )
    ]
    bar = tqdm(  # disable=None: no bar where stderr is no terminal (a redirected log)
        total=len(cases) * len(DEFAULT_CONFIGS),
        unit="gemm",
        desc="bench-gemm",
        disable=True if args.quiet else None,
    )
    for dist, params, n in cases:
        rng = np.random.default_rng(args.seed + n)
        A, B = make_inputs(dist, n, n, n, rng, **params)
        ref, ref_name = _reference(cp, A, B)
        Ad, Bd = cp.asarray(A), cp.asarray(B)
        for method, fmt, corr, backend in DEFAULT_CONFIGS:
            if (
                args.only_corrected
                and dist != "uniform"
                and not (method == "corrected" or fmt == "fp32")
            ):
                bar.update(1)
                continue
            fn = _runner(cp, method, fmt, corr, backend, Ad, Bd)
            D = cp.asnumpy(fn()).astype(np.float64)
            err = error_metrics(D, ref)
            batch = calls_per_sample(fn, warmup=args.warmup)
            times, samples = time_gpu_sampled(fn, repeats=args.repeats, warmup=0, batch=batch)
            t = statistics.median(times)
            flops = 2.0 * n**3
            row = {
                "method": method,
                "correction": corr or "",
                "format": fmt,
                "backend": backend,
                "kernel": _kernel_name(method, fmt, corr, backend),
                "n": n,
                "tflops": flops / t / 1e12,
                "err_fro": err["err_fro"],
                "err_max": err["err_max"],
                "err_median": err.get("err_median"),
                "distribution": dist,
                "phi": params.get("phi", np.nan),
                "time_s_median": t,
                "time_s_min": min(times),
                "repeats": len(times),
                "calls_per_sample": batch,
                "reference": ref_name,
                **summarize(samples, t, flops),
            }
            note = f"{row['power_w']:4.0f} W {row['sm_clock_mhz']:5.0f} MHz"
            if args.sustained > 0 and n == max(args.sizes):
                row.update(_sustained(fn, flops, args.sustained, args.repeats))
                note += (
                    f" | sustained {row['tflops_sustained']:7.1f} TFLOP/s "
                    f"{row['power_w_sustained']:4.0f} W "
                    f"{row['sm_clock_mhz_sustained']:5.0f} MHz"
                )
            row.update({f"prov_{k}": v for k, v in prov.items()})
            rows.append(row)
            bar.update(1)
            tqdm.write(
                f"{dist:9s} phi={params.get('phi', '-')!s:4s} n={n:5d} {backend:6s} "
                f"{method:9s} {fmt:5s} {corr or '':8s} {row['tflops']:8.1f} TFLOP/s "
                f"err_fro={row['err_fro']:.3e} err_max={row['err_max']:.3e}  {note}"
            )
        del Ad, Bd
        cp.get_default_memory_pool().free_all_blocks()
    bar.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not args.out:  # the dated default: claim a file no other bench has taken meanwhile
        out = claim_new(out)
    pd.DataFrame(rows).to_csv(out, index=False)
    print(f"wrote {len(rows)} rows to {out} ({time.strftime('%Y-%m-%d %H:%M:%S')})")
    print(f"figure: python -m precision.gemm.gemm_plots {out} --out DIR")
    return 0


#: ``precision bench-gemm --help``: what the command does, in plain text.
DESCRIPTION = """\
Benchmark our CUDA GEMM kernels and the cuBLAS baselines on the attached GPU, in
one process. One CSV row per (distribution, n, method, format, correction,
backend): TFLOP/s (2 n^3 useful flops over the median time of a whole call from
fp32 device inputs, conversions included; samples of back-to-back calls about
2 ms long, timed by CUDA events), the relative Frobenius and max elementwise
error against the exact product rounded to float64 (a float64 GEMM where that
reference refuses the inputs; the reference column says which), the card's
power, SM clock and temperature during the timed calls, and provenance.

A short run from a cool card is a burst figure; --sustained S adds, at the
largest size, the steady state of S seconds of back-to-back calls.

The CSV goes to a new results/bench/gemm_<gpu-model>_<host>_<date-time>.csv
unless --out is given; a file tracked by git is refused. Without a GPU the
command stops with one line (exit status 2)."""


def register(subparsers) -> None:
    from precision.runner.cli import nonnegative_int, positive_int

    p = subparsers.add_parser(
        "bench-gemm",
        help="benchmark our GEMM kernels and cuBLAS baselines on the GPU",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--sizes",
        type=positive_int,
        nargs="+",
        default=[1024, 4096, 8192],
        metavar="N",
        help="square sizes n of the n x n x n products (default: 1024 4096 8192)",
    )
    p.add_argument(
        "--phi",
        type=float,
        nargs="*",
        default=[0.5],
        help="exp_rand phi values also benchmarked (sizes <= --max-n-exp) (default: 0.5)",
    )
    p.add_argument(
        "--max-n-exp",
        type=nonnegative_int,
        default=4096,
        metavar="N",
        help="largest size of the exp_rand inputs (default: %(default)s)",
    )
    p.add_argument(
        "--only-corrected",
        action="store_true",
        help="for exp_rand inputs run only corrected methods and SGEMM",
    )
    p.add_argument(
        "--repeats",
        type=positive_int,
        default=10,
        help="timed samples per configuration (default: %(default)s)",
    )
    p.add_argument(
        "--warmup",
        type=nonnegative_int,
        default=3,
        help="untimed calls before the timing (default: %(default)s)",
    )
    p.add_argument(
        "--sustained",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="also time each configuration at the largest size back to back for "
        "SECONDS and report the steady state (default 0: off)",
    )
    p.add_argument(
        "--seed",
        type=nonnegative_int,
        default=20240601,
        help="seed of the inputs; size n uses seed + n (default: %(default)s)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="CSV to write (default: a new results/bench/gemm_<gpu-model>_<host>_<date-time>"
        ".csv); a file tracked by git is refused",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar (shown only where stderr is a terminal anyway); the result "
        "lines still print",
    )
    p.set_defaults(func=run)
