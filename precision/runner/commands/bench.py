"""``precision bench``: emulator and exact-reference speed, each next to a same-run baseline.

Rows (one per measurement) go to a CSV with provenance columns:

- ``kind=emulator``: ``mma`` over an n×n×n chained product from ``c = 0`` for one format, on
  ``device`` (cpu: NumPy engine; gpu: CUDA engine, timed end to end from NumPy inputs, so the
  host↔device copies and operand decoding are included). ``macs_per_s = n³ / seconds``.
- ``kind=exact_reference``: ``exact_matmul`` of uniform(−1, 1) fp32 n×n matrices, rounded to fp32.
- ``kind=gpu_vs_cpu``: bit identity of the GPU engine against the CPU engine on an n³ random
  product, the CPU side run on every ``stride``-th output row (rows are independent, so this is
  a subset of the same product); ``identical`` is the fraction of identical bit patterns.
- baseline columns: numpy float64 matmul (cpu) or cuBLAS FP16→FP32 gemmEx (gpu, CUDA events) of
  the same n in the same run.

Times are the median (and min) of ``--repeats`` calls after one warm-up call. The CSV goes to
a new ``results/bench/emulator_<host>_<YYYYmmdd-HHMMSS>.csv`` unless ``--out`` is given (a file
tracked by git is refused). ``--quick`` is a first look in well under 30 s on 2 cores:
n = 512 for fp16/bf16/tf32, the exact reference at n = 1024, one timed call each.
"""

from __future__ import annotations

import argparse
import csv
import functools
import math
import os
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

from precision.formats import get_format

#: Bench case -> (operand format, accumulator format) of the timed ``mma``.
CASES: dict[str, tuple[str, str]] = {
    "f16": ("fp16", "fp32"),
    "bf16": ("bf16", "fp32"),
    "tf32": ("tf32", "fp32"),
    "e4m3": ("e4m3", "fp32"),
    "e5m2": ("e5m2", "fp32"),
    "f16acc": ("fp16", "fp16"),
    "int8": ("int8", "int32"),
    "u8": ("uint8", "int32"),
    "s4": ("int4", "int32"),
    "b1": ("uint1", "int32"),
    "f64": ("fp64", "fp64"),
}


def _case(operand: str, acc: str) -> tuple[type, type, str | None]:
    """(operand dtype, accumulator dtype, ``fmt`` argument of ``mma``) from the registry: the
    storage dtypes; ``fmt`` only where the dtype alone does not name the format (tf32)."""
    fa, fc = get_format(operand), get_format(acc)
    fmt_kw = None if get_format(fa.storage) is fa else fa.name
    return fa.storage.type, fc.storage.type, fmt_kw


#: Bench case -> (operand dtype, accumulator dtype, ``fmt`` argument of ``mma``).
FORMATS: dict[str, tuple[type, type, str | None]] = {k: _case(*v) for k, v in CASES.items()}


#: ``precision bench --help``: what the command does, in plain text.
DESCRIPTION = """\
Time the bit-exact emulator (precision.mma) per format on the CPU and/or GPU
engine, from c = 0 over an n x n x n product, and the exact reference product
(precision.reference.exact_matmul), each next to a baseline timed in the same
run: NumPy float64 matmul on the CPU, cuBLAS FP16->FP32 GEMM on the GPU. With
--device gpu and --verify-n, also check the GPU engine bit for bit against the
CPU engine.

One CSV row per measurement, with provenance columns, goes to a new
results/bench/emulator_<host>_<date-time>.csv unless --out is given. Times are
the median (and min) of --repeats calls after one warm-up call. --quick is a
first look in well under 30 s on 2 cores."""


def _instruction_k(case: str) -> int:
    """k of the sm90 instruction that ``mma`` chains for bench case ``case``: the emulated
    K must be a multiple of it."""
    from precision.tensorcore.arch import get_arch

    return get_arch("sm90").instruction(*CASES[case]).k


def bench_format(text: str) -> str:
    """``argparse`` type of ``--formats``: a bench case (``f16``, ``f16acc``, ...) or any alias
    of a case's operand format (``fp16``, ``half``, ``float16`` -> ``f16``). Anything else is
    returned as given, for ``choices`` to refuse with the list of cases."""
    if text in FORMATS:
        return text
    try:
        name = get_format(text).name
    except (ValueError, TypeError):
        return text
    return next((case for case, (operand, _) in CASES.items() if operand == name), text)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``bench`` sub-command."""
    from precision.runner.cli import nonnegative_int, positive_int

    p = subparsers.add_parser(
        "bench",
        help="emulated MAC/s per format (CPU/GPU) and exact-reference time, with baselines",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ks = ", ".join(f"{f} {_instruction_k(f)}" for f in ("f16", "tf32", "e4m3", "s4", "b1", "f64"))
    p.add_argument(
        "--device",
        nargs="+",
        choices=("cpu", "gpu"),
        default=["cpu"],
        help="engines to time: cpu (NumPy), gpu (CUDA, needs CuPy) or both (default: cpu)",
    )
    p.add_argument(
        "--formats",
        nargs="+",
        type=bench_format,
        choices=tuple(FORMATS),
        default=None,
        metavar="FORMAT",
        help=f"bench cases: {', '.join(FORMATS)} (f16acc: fp16 with fp16 accumulate); any "
        "name of a case's operand format also works (fp16, half, ...) (default: all; "
        "with --quick f16 bf16 tf32)",
    )
    p.add_argument(
        "--cpu-n",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"CPU emulator size n, a multiple of each format's instruction k ({ks}) "
        "(default: 1024; with --quick 512)",
    )
    p.add_argument(
        "--gpu-n",
        type=positive_int,
        default=None,
        metavar="N",
        help="GPU emulator size n, a multiple of each format's instruction k; needs --device "
        "gpu (default: 8192)",
    )
    p.add_argument(
        "--exact-n",
        type=nonnegative_int,
        default=None,
        metavar="N",
        help="exact reference size; 0 skips it (default: 4096; with --quick 1024)",
    )
    p.add_argument(
        "--verify-n",
        type=nonnegative_int,
        default=0,
        metavar="N",
        help="GPU-vs-CPU bit check size, a multiple of each checked format's instruction k; "
        "needs --device gpu (default: 0, skip)",
    )
    p.add_argument(
        "--verify-formats",
        nargs="+",
        type=bench_format,
        choices=tuple(FORMATS),
        default=None,
        metavar="FORMAT",
        help="formats of the bit check, as --formats; needs --verify-n (default: all)",
    )
    p.add_argument(
        "--verify-stride",
        type=positive_int,
        default=None,
        metavar="K",
        help="bit check: the CPU engine runs every K-th output row; needs --verify-n (default: 8)",
    )
    p.add_argument(
        "--repeats",
        type=positive_int,
        default=None,
        help="timed calls per measurement, after one warm-up call (default: 3; with --quick 1)",
    )
    p.add_argument(
        "--seed",
        type=nonnegative_int,
        default=0,
        help="seed of the random inputs (default: %(default)s)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a first look (well under 30 s on 2 cores): n=512, fp16/bf16/tf32, exact "
        "reference at n=1024, one timed call; explicit options still win",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="CSV to write (default: a new results/bench/emulator_<host>_<date-time>.csv); "
        "a file tracked by git is refused",
    )
    p.add_argument("--append", action="store_true", help="append to --out instead of replacing")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar (shown only where stderr is a terminal anyway); the result "
        "lines still print",
    )
    p.set_defaults(func=main)


def size_problem(
    option: str, n: int, cases: list[str], formats_option: str = "--formats"
) -> str | None:
    """None if every bench case in ``cases`` can emulate an ``n``-cubed product, else the
    one-line reason (``n`` not a multiple of a case's instruction k)."""
    by_k: dict[int, list[str]] = {}
    for case in cases:
        by_k.setdefault(_instruction_k(case), []).append(case)
    bad = sorted((k for k in by_k if n % k), reverse=True)
    if not bad:
        return None
    step = math.lcm(*by_k)
    near = sorted({max(step, n // step * step), (n // step + 1) * step})
    which = ", ".join(f"{'/'.join(by_k[k])} ({k})" for k in bad)
    return (
        f"{option} {n}: not a multiple of the instruction k of {which}; use a multiple of {step} "
        f"(e.g. {' or '.join(map(str, near))}) or other {formats_option}"
    )


def _inputs(fmt: str, m: int, k: int, n: int, rng: np.random.Generator):
    in_dt, acc_dt, _ = FORMATS[fmt]
    f = get_format(CASES[fmt][0])
    a: np.ndarray
    b: np.ndarray
    if f.is_integer:  # the whole range of the format, in its storage dtype
        lo, hi = int(f.min_value), int(f.max_normal)
        a = rng.integers(lo, hi + 1, (m, k)).astype(in_dt)
        b = rng.integers(lo, hi + 1, (k, n)).astype(in_dt)
    elif f.name == "fp64":  # full 53-bit significands (fp32-converted inputs take a shortcut)
        a = rng.uniform(-1, 1, (m, k))
        b = rng.uniform(-1, 1, (k, n))
    else:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32).astype(in_dt)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32).astype(in_dt)
    return a, b, np.zeros((m, n), dtype=acc_dt)


def _timed(fn: Callable[[], object], repeats: int, warmup: bool = True) -> tuple[float, float]:
    """Median and minimum seconds of ``repeats`` calls of ``fn``, after one untimed call
    unless ``warmup`` is False (the caller made it)."""
    if warmup:
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), float(min(times))


def _cpu_baseline(n: int, repeats: int, rng) -> tuple[str, float]:
    x, y = rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, (n, n))
    return "numpy_float64_matmul", _timed(lambda: x @ y, repeats)[0]


def _gpu_baseline(n: int, repeats: int, rng) -> tuple[str, float]:
    import cupy as cp

    from precision.gpu import time_gpu
    from precision.vendor.cublas import cublas_gemm

    x = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    y = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    times = time_gpu(lambda: cublas_gemm(x, y, mode="f16"), repeats=max(repeats, 5))
    return "cublas_f16_fp32out", float(np.median(times))


def _row(device, kind, fmt, n, med, mn, repeats, baseline, base_s, **extra) -> dict:
    macs = float(n) ** 3
    return {
        "device": device,
        "kind": kind,
        "format": fmt,
        "n": n,
        "seconds_median": med,
        "seconds_min": mn,
        "repeats": repeats,
        "macs_per_s": macs / med if med else None,
        "baseline": baseline,
        "baseline_seconds": base_s,
        "baseline_macs_per_s": macs / base_s if base_s else None,
        **extra,
    }


def _emulator_rows(device: str, args, rng) -> list[dict]:
    from precision import mma

    n = args.cpu_n if device == "cpu" else args.gpu_n
    baseline = _cpu_baseline if device == "cpu" else _gpu_baseline
    from tqdm.auto import tqdm

    rows = []
    # disable=None: no bar where stderr is no terminal (its \r frames would mix with the
    # result lines of a redirected log)
    bar = tqdm(
        args.formats,
        desc=f"{device} emulator n={n}",
        unit="format",
        leave=False,
        disable=True if args.quiet else None,
    )
    for fmt in bar:
        a, b, c = _inputs(fmt, n, n, n, rng)
        call = functools.partial(mma, a, b, c, fmt=FORMATS[fmt][2], device=device)
        # The peak host memory from the warm-up call, traced; the timed calls run untraced
        # (tracemalloc hooks every allocation: the f16 CPU emulator took 4.7 s under it at
        # n = 1024 against 2.3 s without).
        tracemalloc.start()
        call()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        med, mn = _timed(call, args.repeats, warmup=False)
        name, base_s = baseline(n, args.repeats, rng)
        rows.append(
            _row(
                device,
                "emulator",
                fmt,
                n,
                med,
                mn,
                args.repeats,
                name,
                base_s,
                peak_host_bytes=peak,
            )
        )
        tqdm.write(
            f"{device} emulator {fmt:7s} n={n}: {med:.3f} s, {n**3 / med:.3e} MAC/s "
            f"(baseline {name} {base_s:.4f} s)"
        )
    return rows


def _exact_rows(device: str, args, rng) -> list[dict]:
    from precision.reference import exact_matmul

    n = args.exact_n
    x = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    y = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    if device == "gpu":
        import cupy as cp

        x, y = cp.asarray(x), cp.asarray(y)

        def call():
            exact_matmul(x, y, rounding="fp32", device="gpu")
            cp.cuda.Device().synchronize()
    else:

        def call():
            exact_matmul(x, y, rounding="fp32")

    repeats = 1 if device == "cpu" else args.repeats
    t0 = time.perf_counter()
    call()  # also the warm-up
    first = time.perf_counter() - t0
    if device == "cpu":
        med = mn = first
    else:
        med, mn = _timed(call, repeats)
    name, base_s = (_cpu_baseline if device == "cpu" else _gpu_baseline)(n, args.repeats, rng)
    print(
        f"{device} exact_reference n={n}: {med:.3f} s (baseline {name} {base_s:.4f} s)", flush=True
    )
    return [_row(device, "exact_reference", "fp32", n, med, mn, repeats, name, base_s)]


def _verify_rows(args, rng) -> list[dict]:
    from precision import mma

    n, stride = args.verify_n, args.verify_stride
    rows = []
    for fmt in args.verify_formats:
        a, b, c = _inputs(fmt, n, n, n, rng)
        fmt_kw = FORMATS[fmt][2]
        t0 = time.perf_counter()
        gpu = mma(a, b, c, fmt=fmt_kw, device="gpu")[::stride]
        t_gpu = time.perf_counter() - t0
        t0 = time.perf_counter()
        cpu = mma(a[::stride], b, c[::stride], fmt=fmt_kw)
        t_cpu = time.perf_counter() - t0
        u = np.dtype(f"u{cpu.dtype.itemsize}")  # compare bits (NaN payloads included)
        same = float((gpu.view(u) == cpu.view(u)).mean())
        row = _row(
            "gpu",
            "gpu_vs_cpu",
            fmt,
            n,
            t_gpu,
            t_gpu,
            1,
            f"cpu_engine_rows_every_{stride}",
            t_cpu,
            identical=same,
            elements_compared=int(cpu.size),
        )
        row["baseline_macs_per_s"] = float(cpu.shape[0]) * n * n / t_cpu  # the rows it did
        rows.append(row)
        print(
            f"verify {fmt:7s} n={n} rows::{stride}: identical fraction {same} "
            f"({cpu.size} elements; gpu {t_gpu:.2f} s, cpu {t_cpu:.2f} s)",
            flush=True,
        )
    return rows


QUICK = {"formats": ["f16", "bf16", "tf32"], "cpu_n": 512, "exact_n": 1024, "repeats": 1}
FULL = {"formats": list(FORMATS), "cpu_n": 1024, "exact_n": 4096, "repeats": 3}
#: The GPU and bit-check settings, the same with and without --quick.
DEFAULTS = {"gpu_n": 8192, "verify_formats": list(FORMATS), "verify_stride": 8}


def main(args: argparse.Namespace) -> int:
    """Run the requested measurements and write the CSV; return 0 (1 if a bit check failed,
    2 if the output or a GPU is unusable)."""
    import sys

    from precision.console import file_destination_problem
    from precision.gpu import exit_without_gpu
    from precision.provenance import collect
    from precision.runner.bench_output import check_out, default_path
    from precision.runner.store import claim_new

    # Options of a measurement that is not asked for would be ignored, silently: refused
    unused = [(args.gpu_n, "--gpu-n", "--device gpu", "gpu" not in args.device),
              (args.verify_formats, "--verify-formats", "--verify-n", not args.verify_n),
              (args.verify_stride, "--verify-stride", "--verify-n", not args.verify_n)]  # fmt: skip
    for value, option, needs, missing in unused:
        if value is not None and missing:
            print(f"error: {option} needs {needs} (without it nothing uses it)", file=sys.stderr)
            return 2
    for key, value in {**DEFAULTS, **(QUICK if args.quick else FULL)}.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    # Aliases name one case several ways (--formats fp16 half): each is measured once.
    for key in ("device", "formats", "verify_formats"):
        setattr(args, key, list(dict.fromkeys(getattr(args, key))))
    if args.append and args.out is None:
        print("error: --append needs --out (the default file is new each time)", file=sys.stderr)
        return 2
    if args.verify_n and "gpu" not in args.device:  # else it would be ignored, silently
        print(
            f"error: --verify-n {args.verify_n} needs --device gpu (it checks the GPU engine "
            "against the CPU engine)",
            file=sys.stderr,
        )
        return 2
    dated = args.out is None  # the default: a new file, claimed when the rows are written
    args.out = args.out or default_path("emulator")
    problem = check_out(args.out)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    sizes = [("--cpu-n", args.cpu_n, args.formats, "--formats")] if "cpu" in args.device else []
    if "gpu" in args.device:
        sizes.append(("--gpu-n", args.gpu_n, args.formats, "--formats"))
        if args.verify_n:
            sizes.append(("--verify-n", args.verify_n, args.verify_formats, "--verify-formats"))
    for option, n, cases, formats_option in sizes:  # before any measurement
        problem = size_problem(option, n, cases, formats_option)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    if "gpu" in args.device and exit_without_gpu("precision bench --device gpu"):
        return 2
    problem = file_destination_problem(args.out, "--out")
    if problem is None and args.append and args.out.exists():
        problem = _append_problem(args.out)
    if problem:  # before the measurements: their rows would have nowhere to go
        print(f"error: {problem}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    rows: list[dict] = []
    for device in args.device:
        if device == "gpu":
            if args.verify_n:
                rows += _verify_rows(args, rng)
        rows += _emulator_rows(device, args, rng)
        if args.exact_n:
            rows += _exact_rows(device, args, rng)
    prov = collect(seed=args.seed)
    if prov.get("git_commit") is None:  # e.g. a copy of the tree without .git
        prov["git_commit"] = os.environ.get("PRECISION_GIT_COMMIT")
    rows = [{**r, **prov} for r in rows]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if dated:
        args.out = claim_new(args.out)
    fields: list[str] = []
    for r in rows:
        fields += [k for k in r if k not in fields]
    failed = any(r.get("identical", 1.0) != 1.0 for r in rows)
    refused = False
    header = _csv_header(args.out) if args.append and args.out.exists() else []
    mode = "a" if header else "w"  # (an empty file is written as a new one)
    if mode == "a":
        extra = [f for f in fields if f not in header]
        if extra:  # appending would put values under other columns' names
            wanted = args.out
            args.out, mode, refused = claim_new(args.out), "w", True
            print(
                f"error: cannot append to {wanted}: it has no column {', '.join(extra)} (a "
                f"file written before this bench recorded it); the rows are written to "
                f"{args.out} instead",
                file=sys.stderr,
            )
        else:
            fields = header  # the file's own column order (columns this bench lacks stay empty)
    with args.out.open(mode, newline="") as fh:
        if mode == "a" and not _ends_with_newline(args.out):
            fh.write("\r\n")  # (else the first row would run on from the file's last line)
        writer = csv.DictWriter(fh, fieldnames=fields)
        if mode == "w":
            writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} rows to {args.out}")
    return 1 if failed else 2 if refused else 0  # (a failed identity check first)


def _csv_header(path: Path) -> list[str]:
    """The column names on the first line of the csv file ``path`` ([] if it is empty)."""
    with path.open(newline="") as fh:
        return next(csv.reader(fh), [])


def _append_problem(path: Path) -> str | None:
    """Why the rows cannot be appended to the existing file ``path`` (asked before the
    measurements: it crashed after them, losing the rows, on a file that is not UTF-8
    text), or None."""
    try:
        _csv_header(path)
    except (UnicodeDecodeError, csv.Error) as exc:
        return f"cannot append to {path}: it is not a CSV text file ({type(exc).__name__})"
    except OSError as exc:
        return f"cannot append to {path}: {exc.strerror or exc}"
    return None


def _ends_with_newline(path: Path) -> bool:
    """Whether the file ``path`` is empty or ends with a line break."""
    with path.open("rb") as fh:
        if fh.seek(0, 2) == 0:
            return True
        fh.seek(-1, 2)
        return fh.read(1) in (b"\n", b"\r")
