"""Benchmark and bit-identity check of the Ozaki methods on a GPU.

``python -m precision.gemm.ozaki_bench --out DIR [--sizes 8192 16384] [--sustain 4]``

1. **Bit identity**: ``ozaki2`` CUDA (each INT8 GEMM path: cuBLAS, and our fused modular
   kernel) vs emulator at n in {16, 100, 257, 1024}, phi in {0, 1, 4}, targets fp64/fp32,
   ``terms="auto"`` and a fixed count (15 / 8), NaN/Inf/subnormals injected in some cases.
   Writes ``DIR/ozaki_identity.csv`` and the small cases (inputs and CUDA outputs) to
   ``DIR/ozaki_cuda_h200.npz`` for tests/data, in :mod:`precision.gemm.ozaki_cases`'s format
   (outputs at n >= 100 as SHA-256 + first rows).
2. **Errors** at ``--err-sizes`` (default 4096 and 8192) for phi in {0, 0.5, 1, 2, 4}:
   median / max elementwise relative error against :func:`precision.reference.exact_matmul`
   (on the GPU), for DGEMM, SGEMM, the corrected fp16 kernel, cuBLAS's FP64 emulation
   (dynamic mantissa control and each ``--emu-bits`` count) and ozaki2.
3. **Speed** at each size (phi = 0.5 data; ``terms="auto"`` also on phi = 2 and 4): DGEMM
   (cuBLAS via CuPy), SGEMM, our corrected fp16 kernel, cuBLAS's fixed-point FP64 emulation
   (eager strategy, when the library exposes it; its dynamic mantissa control and each
   ``--emu-bits`` fixed count, in ``terms``), ozaki2 fp64 for several moduli counts and
   ``auto``, ozaki2 fp32, per GEMM path. Burst: median of 10 calls; sustained: back to back
   for ``--sustain`` seconds (:func:`precision.telemetry.time_gpu_sampled`), with board
   power; the per-phase times of one more call.

Rows go to ``DIR/ozaki_bench.csv`` with columns method, target, fmt, terms, backend, n, phi,
tflops, tflops_sustained, err_median, err_max, then extras and provenance;
``DIR/ozaki_acceptance.md`` evaluates issue #17's acceptance lines on them. A ``DIR`` that
already holds any of these files (an earlier run) is refused: each run gets a new directory.
"""

from __future__ import annotations

import argparse
import csv
import functools
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from precision.console import directory_destination_problem, run_main
from precision.gemm import ozaki_cases
from precision.gpu import exit_without_gpu

COLUMNS = [
    "method", "target", "fmt", "terms", "backend", "n", "phi", "tflops", "tflops_sustained",
    "err_median", "err_max",
]  # fmt: skip


#: The files a run writes into its ``--out`` directory (an earlier run's are never
#: overwritten: ``main`` refuses a directory holding any of them). ``CASES_NPZ``'s format,
#: reading and comparison: :mod:`precision.gemm.ozaki_cases`.
BENCH_CSV, IDENTITY_CSV = "ozaki_bench.csv", "ozaki_identity.csv"
CASES_NPZ, ACCEPTANCE_MD = "ozaki_cuda_h200.npz", "ozaki_acceptance.md"
OUTPUT_FILES = (BENCH_CSV, IDENTITY_CSV, CASES_NPZ, ACCEPTANCE_MD)


def log(*a: Any) -> None:
    print(*a, flush=True)


def exp_rand(rng: np.random.Generator, shape: tuple[int, int], phi: float) -> np.ndarray:
    from precision.distributions import get_distribution

    return get_distribution("exp_rand").func(rng, shape, phi=phi)


def error_inputs(n: int, phi: float) -> tuple[np.ndarray, np.ndarray]:
    """A and B (n x n, exp_rand with ``phi``) of the errors stage, seeded by ``n`` and ``phi``."""
    rng = np.random.default_rng(int(phi * 100) + n)
    return exp_rand(rng, (n, n), phi), exp_rand(rng, (n, n), phi)


def inject_specials(A: np.ndarray, B: np.ndarray, rng: np.random.Generator) -> None:
    """A NaN, +Inf, -Inf in A, an Inf in B, an Inf·0 pair and a subnormal row, in place."""
    m, k = A.shape
    n = B.shape[1]
    A[rng.integers(m), rng.integers(k)] = np.nan
    A[rng.integers(m), rng.integers(k)] = np.inf
    A[rng.integers(m), rng.integers(k)] = -np.inf
    B[rng.integers(k), rng.integers(n)] = np.inf
    i, kk = rng.integers(m), rng.integers(k)
    A[i, kk] = -np.inf
    B[kk, rng.integers(n)] = 0.0
    A[rng.integers(m)] *= 2.0**-1050


# ------------------------------------------------------------------------------ identity


def gemm_paths() -> list[str]:
    """The INT8 GEMM paths of :func:`precision.gemm.ozaki_cuda.ozaki2_cuda` to exercise:
    cuBLAS, and our fused modular kernel when this tree has it."""
    import importlib.util

    fused = importlib.util.find_spec("precision.gemm.ozaki_gemm_launch") is not None
    return ["cublas", "fused"] if fused else ["cublas"]


def _cuda_run(
    cp: Any,
    A: np.ndarray,
    B: np.ndarray,
    method: str,
    fmt: str,
    target: str,
    terms: Any,
    path: str,
) -> tuple[np.ndarray, int]:
    """One CUDA Ozaki GEMM on host inputs: (host output, terms used)."""
    from precision.gemm.ozaki1_cuda import ozaki1_cuda
    from precision.gemm.ozaki_cuda import ozaki2_cuda

    if method == "ozaki2":
        D, run = ozaki2_cuda(cp.asarray(A), cp.asarray(B), target=target, terms=terms, gemm=path)
        return cp.asnumpy(D), run.plan.terms
    D1, run1 = ozaki1_cuda(cp.asarray(A), cp.asarray(B), fmt=fmt, target=target, terms=terms)
    return cp.asnumpy(D1), run1.plan.terms


def identity(out: Path, sizes: list[int]) -> bool:
    import cupy as cp

    from precision.gemm.ozaki import ozaki_gemm

    rows: list[dict] = []
    cases: dict[str, Any] = {}
    all_ok = True
    for method, fmt in (("ozaki2", "int8"), ("ozaki1", "int8"), ("ozaki1", "fp16")):
        fixed = {("ozaki2", "fp64"): 15, ("ozaki2", "fp32"): 8}
        paths = gemm_paths() if method == "ozaki2" else ["cublas"]
        for n in sizes:
            for phi in (0.0, 1.0, 4.0):
                for target in ("fp64", "fp32"):
                    big = n >= 1024  # the emulator's time: only auto terms with specials there
                    terms_list = ("auto", fixed.get((method, target), 4))
                    for terms in terms_list[:1] if big else terms_list:
                        for special in (True,) if big else (False, True):
                            rng = np.random.default_rng(1000 * n + int(10 * phi))
                            A, B = exp_rand(rng, (n, n), phi), exp_rand(rng, (n, n), phi)
                            if special:
                                inject_specials(A, B, rng)
                            t1 = time.perf_counter()
                            de = ozaki_gemm(A, B, method=method, fmt=fmt, target=target,
                                            terms=terms)  # fmt: skip
                            t2 = time.perf_counter()
                            for path in paths:
                                t0 = time.perf_counter()
                                dg, used = _cuda_run(cp, A, B, method, fmt, target, terms, path)
                                u = f"u{dg.itemsize}"
                                diff = int(np.count_nonzero(dg.view(u) != de.view(u)))
                                all_ok &= diff == 0
                                rows.append(
                                    dict(method=method, fmt=fmt, n=n, phi=phi, target=target,
                                         terms=terms, gemm=path, used_terms=used,
                                         specials=special, differ=diff,
                                         cuda_s=round(time.perf_counter() - t0, 3),
                                         emulator_s=round(t2 - t1, 3))
                                )  # fmt: skip
                                log("identity", rows[-1])
                            keep = n == 16 or (n == 100 and terms == "auto")
                            keep |= n == 257 and phi == 1.0 and terms == "auto" and special
                            if keep:  # inputs stored once per (n, phi, specials)
                                inp = f"in_n-{n}_phi-{phi:g}_specials-{int(special)}"
                                cases[inp + "_A"], cases[inp + "_B"] = A, B
                                key = f"case_method-{method}_fmt-{fmt}_n-{n}_phi-{phi:g}"
                                key += f"_target-{target}_terms-{terms}_specials-{int(special)}"
                                cases.update(ozaki_cases.output_entries(key, dg))
    with open(out / IDENTITY_CSV, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    np.savez_compressed(out / CASES_NPZ, **cases)
    log("IDENTITY", "ALL BIT-IDENTICAL" if all_ok else "DIFFERENCES FOUND")
    return all_ok


# ----------------------------------------------------------------------- cuBLAS emulation


#: Fixed mantissa-bit settings of cuBLAS's FP64 emulation benchmarked next to its dynamic
#: default (``--emu-bits``). On the H200 at n = 4096, 48 bits is the fewest that met DGEMM's
#: median error at phi = 0.5 (results/bench/cublas_emulation_bits_h200_2026-11-23.txt).
EMU_BITS = (48, 56)


def cublas_fp64_emulations(bits: Sequence[int]) -> list[tuple[int | str, Any]]:
    """cuBLAS's fixed-point FP64 emulation (eager strategy) as ``(terms, f)`` pairs: ``""``
    for its dynamic mantissa control, then one per fixed mantissa-bit count in ``bits``
    (:func:`precision.vendor.cublas.fp64_emulated_gemm`); the settings this cuBLAS does not
    offer are logged and left out. In the rows, ``terms`` holds the fixed bit count and
    ``emu_bits_used`` the count cuBLAS reports for the call."""
    from precision.vendor.cublas import fp64_emulated_gemm

    out: list[tuple[int | str, Any]] = []
    for b in [None, *bits]:
        f, why = fp64_emulated_gemm(b)
        if f is None:
            log(f"cuBLAS FP64 emulation (mantissa bits {b or 'dynamic'}):", why)
            continue
        out.append(("" if b is None else b, f))
    return out


# --------------------------------------------------------------------------------- speed


def timed(cp: Any, fn: Any, flops: float, sustain: float) -> dict[str, float]:
    from precision.telemetry import summarize, time_gpu_sampled

    burst, _ = time_gpu_sampled(fn, repeats=10, warmup=2)
    sus, samples = time_gpu_sampled(fn, repeats=3, warmup=0, min_seconds=sustain)
    t_b, t_s = float(np.median(burst)), float(np.median(sus))
    tele = summarize(samples, t_s, flops)
    return {
        "tflops": flops / t_b / 1e12,
        "tflops_sustained": flops / t_s / 1e12,
        "ms_burst": t_b * 1e3,
        "ms_sustained": t_s * 1e3,
        "power_w": tele["power_w"],
        "pj_per_flop": tele["pj_per_flop"],
        "power_capped_frac": tele["power_capped_frac"],
    }


def speed(
    sizes: list[int],
    sustain: float,
    moduli: list[int],
    fp32_moduli: list[int],
    emu_bits: Sequence[int] = EMU_BITS,
) -> list[dict]:
    import cupy as cp

    emus = cublas_fp64_emulations(emu_bits)
    rows: list[dict] = []
    for n in sizes:
        rows += _speed_at(cp, n, sustain, moduli, fp32_moduli, emus)
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _first(f: Any, *args: Any, **kw: Any) -> Any:
    return f(*args, **kw)[0]


def _speed_at(
    cp: Any,
    n: int,
    sustain: float,
    moduli: list[int],
    fp32_moduli: list[int],
    emus: list[tuple[int | str, Any]],
) -> list[dict]:
    from precision.gemm.api import cuda_gemm
    from precision.gemm.ozaki_cuda import ozaki2_cuda
    from precision.gemm.schedule import get_schedule
    from precision.vendor.cublas import cublas_gemm

    cp.random.seed(n)
    A = (cp.random.random((n, n)) - 0.5) * cp.exp(0.5 * cp.random.standard_normal((n, n)))
    B = (cp.random.random((n, n)) - 0.5) * cp.exp(0.5 * cp.random.standard_normal((n, n)))
    A32, B32 = A.astype(cp.float32), B.astype(cp.float32)
    flops = 2.0 * n**3
    base = dict(n=n, phi=0.5, err_median=math.nan, err_max=math.nan)

    def meta(method: str, target: str, fmt: str, terms: Any, backend: str) -> dict:
        return dict(method=method, target=target, fmt=fmt, terms=terms, backend=backend)

    cands: list[tuple[dict, Any]] = [
        (meta("dgemm", "fp64", "fp64", "", "cublas"), lambda: A @ B),
        (meta("sgemm", "fp32", "fp32", "", "cublas"), lambda: cublas_gemm(A32, B32, mode="sgemm")),
    ]
    for bits, emu in emus:
        cands.append((meta("cublas_fp64_emulated_eager", "fp64", "int8", bits, "cublas"),
                      functools.partial(emu, A, B)))  # fmt: skip
    corrected = get_schedule("corrected", "fp16", "ootomo")
    cands.append((meta("corrected_fp16_ootomo", "fp32", "fp16", "", "cuda"),
                  lambda: cuda_gemm(A32, B32, corrected)))  # fmt: skip
    paths = gemm_paths()
    for path in paths:  # every count on the fastest path, one per target on the others
        for tgt, counts in (("fp64", [*moduli, "auto"]), ("fp32", fp32_moduli)):
            if path != paths[-1]:
                counts = [15 if tgt == "fp64" else 8]
            for t in counts:
                fn = functools.partial(_first, ozaki2_cuda, A, B, target=tgt, terms=t, gemm=path)
                cands.append(({**meta("ozaki2", tgt, "int8", t, "cuda"), "gemm": path}, fn))
    wide = {}
    for phi in (2.0, 4.0):  # terms="auto" on wide exponent ranges: how many moduli, how fast
        wa = (cp.random.random((n, n)) - 0.5) * cp.exp(phi * cp.random.standard_normal((n, n)))
        wb = (cp.random.random((n, n)) - 0.5) * cp.exp(phi * cp.random.standard_normal((n, n)))
        wide[phi] = (wa, wb)
        path = gemm_paths()[-1]
        fn = functools.partial(_first, ozaki2_cuda, wa, wb, target="fp64", terms="auto",
                               gemm=path)  # fmt: skip
        cands.append(({**meta("ozaki2", "fp64", "int8", "auto", "cuda"), "gemm": path,
                       "phi": phi}, fn))  # fmt: skip
    rows = []
    for md, fn in cands:
        try:
            r = {**base, **md, **timed(cp, fn, flops, sustain)}
        except Exception as exc:
            log("FAILED", md, repr(exc))
            continue
        if md["method"] == "ozaki2":
            a, b = wide.get(md.get("phi", 0.5), (A, B))
            _, run = ozaki2_cuda(a, b, target=md["target"], terms=md["terms"], timed=True,
                                 gemm=md["gemm"])  # fmt: skip
            r["moduli"] = run.plan.terms
            r["workspace_gb"] = run.workspace_bytes / 1e9
            r["workspace_x_input"] = run.workspace_bytes / (A.nbytes + B.nbytes)
            r["row_block"] = run.mb
            r["col_block"] = run.nb
            for k, v in run.phase_ms.items():
                r[f"ms_{k}"] = v
        rows.append(r)
        log("speed", {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
    return rows


# -------------------------------------------------------------------------------- errors


def errors(
    sizes: list[int],
    moduli: list[int],
    fp32_moduli: list[int],
    phis: list[float],
    emu_bits: Sequence[int] = EMU_BITS,
) -> list[dict]:
    rows: list[dict] = []
    emus = cublas_fp64_emulations(emu_bits)
    for n in sizes:
        rows += _errors_at(n, moduli, fp32_moduli, phis, emus)
    return rows


def _errors_at(
    n: int,
    moduli: list[int],
    fp32_moduli: list[int],
    phis: list[float],
    emus: list[tuple[int | str, Any]],
) -> list[dict]:
    import cupy as cp

    from precision.gemm.api import cuda_gemm
    from precision.gemm.ozaki_cuda import ozaki2_cuda
    from precision.gemm.schedule import get_schedule
    from precision.metrics import error_metrics
    from precision.reference import exact_matmul
    from precision.vendor.cublas import cublas_gemm

    rows = []
    for phi in phis:
        Ah, Bh = error_inputs(n, phi)
        A, B = cp.asarray(Ah), cp.asarray(Bh)
        ex = cp.asnumpy(exact_matmul(A, B, device="gpu"))
        base = dict(n=n, phi=phi, tflops=math.nan, tflops_sustained=math.nan)

        def add(meta: dict, D: Any, ex: Any = ex, base: dict = base, **extra: Any) -> None:
            m = error_metrics(cp.asnumpy(D).astype(np.float64), ex)
            rows.append({**meta, **base, "err_median": m["err_median"], "err_max": m["err_max"],
                         **extra})  # fmt: skip
            log("error", rows[-1])

        add(dict(method="dgemm", target="fp64", fmt="fp64", terms="", backend="cublas"), A @ B)
        add(dict(method="sgemm", target="fp32", fmt="fp32", terms="", backend="cublas"),
            cublas_gemm(A.astype(cp.float32), B.astype(cp.float32), mode="sgemm"))  # fmt: skip
        corrected = get_schedule("corrected", "fp16", "ootomo")
        D32 = cuda_gemm(A.astype(cp.float32), B.astype(cp.float32), corrected)
        add(dict(method="corrected_fp16_ootomo", target="fp32", fmt="fp16", terms="",
                 backend="cuda"), D32)  # fmt: skip
        for bits, emu in emus:
            add(dict(method="cublas_fp64_emulated_eager", target="fp64", fmt="int8", terms=bits,
                     backend="cublas"), emu(A, B), emu_bits_used=emu.bits_used())  # fmt: skip
        counts: list[int | str] = [*moduli, "auto"]
        for t in counts:
            D, run = ozaki2_cuda(A, B, target="fp64", terms=t)
            add(dict(method="ozaki2", target="fp64", fmt="int8", terms=t, backend="cuda"), D,
                moduli=run.plan.terms)  # fmt: skip
        counts = [*fp32_moduli, "auto"]
        for t in counts:
            D, run = ozaki2_cuda(A, B, target="fp32", terms=t)
            add(dict(method="ozaki2", target="fp32", fmt="int8", terms=t, backend="cuda"), D,
                moduli=run.plan.terms)  # fmt: skip
        del A, B
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _s(v: Any) -> str:
    """A table cell: '' for missing/NaN, integral floats as ints (CSV round trips)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _pick(rows: list[dict], **key: Any) -> list[dict]:
    return [r for r in rows if all(str(r.get(k)) == str(v) for k, v in key.items())]


def acceptance(rows: list[dict], fp64_terms: int = 15, fp32_terms: int = 8) -> str:
    """Issue #17's acceptance lines, evaluated on this run's rows (markdown): per size, the
    sustained speed of ozaki2 fp64 with ``fp64_terms`` moduli (each GEMM path) against DGEMM's,
    and per error size and phi, its median / max error against DGEMM's; fp32 next to SGEMM and
    the corrected fp16 kernel."""
    out = ["# Ozaki-II acceptance (issue #17), from these rows (see their git_commit)", ""]
    sizes = sorted({int(r["n"]) for r in rows if not math.isnan(float(r["tflops"]))})
    out += ["| n | method | terms | GEMM | TFLOP/s burst | sustained | x DGEMM sustained |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for n in sizes:
        dg = [r for r in _pick(rows, method="dgemm", n=n, phi=0.5)  # the speed row, not
              if not math.isnan(float(r["tflops_sustained"]))]  # an errors-stage one  # fmt: skip
        base = float(dg[0]["tflops_sustained"]) if dg else math.nan
        for r in _pick(rows, n=n, phi=0.5):
            if not math.isnan(float(r["tflops"])):
                ratio = float(r["tflops_sustained"]) / base
                terms = f"{_s(r.get('terms'))} ({_s(r.get('moduli'))})"
                out.append(f"| {n} | {r['method']} {r['target']} | {terms} | {_s(r.get('gemm'))}"
                           f" | {float(r['tflops']):.1f} | {float(r['tflops_sustained']):.1f}"
                           f" | {ratio:.2f} |")  # fmt: skip
    out += ["", "| n | phi | method | terms (moduli) | median err | max err | "
            "median <= DGEMM | max <= 2x DGEMM |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        if math.isnan(float(r["err_median"])) or r["method"] == "dgemm":
            continue
        dg = _pick(rows, method="dgemm", n=r["n"], phi=r["phi"])
        dg = [d for d in dg if not math.isnan(float(d["err_median"]))]
        if not dg:
            continue
        med, mx = float(dg[0]["err_median"]), float(dg[0]["err_max"])
        ok_med = float(r["err_median"]) <= med
        ok_max = float(r["err_max"]) <= 2 * mx
        out.append(f"| {r['n']} | {r['phi']} | {r['method']} {r['target']} | {_s(r.get('terms'))}"
                   f" ({_s(r.get('moduli'))}) | {float(r['err_median']):.2e} | "
                   f"{float(r['err_max']):.2e} | {ok_med} | {ok_max} |")  # fmt: skip
    return "\n".join(out) + "\n"


def read_bench_tables(paths: list[Path]) -> tuple[list[Any], list[str]]:
    """The bench tables ``paths`` (pandas frames) and, for each that cannot be used, one
    line saying why: missing, unreadable, empty, or without a column the acceptance needs
    (:data:`COLUMNS`)."""
    import pandas as pd

    frames, problems = [], []
    for path in paths:
        why = _why_unreadable(path)
        if why is None:
            try:
                frame = pd.read_csv(path)
            except (ValueError, OSError) as exc:  # empty or malformed csv (EmptyDataError...)
                why = f"not a csv table: {type(exc).__name__}: {' '.join(str(exc).split())}"
            else:
                missing = [c for c in COLUMNS if c not in frame.columns]
                if missing:
                    why = f"no column {', '.join(missing)}"
                else:
                    frames.append(frame)
        if why is not None:
            problems.append(f"{path} ({why})")
    return frames, problems


def combine(frames: list[Any], out: Path) -> int:
    """Join bench tables (e.g. the identity/errors and the speed stages, run as two calls)
    into ``out/ozaki_bench.csv`` and write ``out/ozaki_acceptance.md``."""
    import pandas as pd

    commits = {str(c) for f in frames for c in f.get("git_commit", pd.Series(dtype=str)).unique()}
    if len(commits) > 1:  # each row keeps its own commit (provenance column git_commit)
        log(f"--combine: rows from commits {sorted(commits)}; see the git_commit column")
    df = pd.concat(frames, ignore_index=True)
    df.to_csv(out / BENCH_CSV, index=False)
    rows = [{k: v for k, v in r.items() if not (isinstance(v, float) and math.isnan(v)) or
             k in COLUMNS} for r in df.to_dict("records")]  # fmt: skip
    text = acceptance(rows)
    (out / ACCEPTANCE_MD).write_text(text)
    log(text)
    return 0


def _why_unreadable(path: Path) -> str | None:
    """Why the csv file ``path`` cannot be read (missing, a directory, no access), or None."""
    if not path.exists():
        return "no such file"
    if not path.is_file():
        return "not a file"
    try:
        with path.open("rb"):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m precision.gemm.ozaki_bench", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--out", required=True, type=Path,
                    help="a new directory for the results (created if missing)")  # fmt: skip
    ap.add_argument("--sizes", type=int, nargs="*", default=[8192, 16384],
                    help="sizes n of the speed stage (default 8192 16384)")  # fmt: skip
    ap.add_argument("--identity-sizes", type=int, nargs="*", default=[16, 100, 257, 1024],
                    help="sizes n of the bit-identity stage (default 16 100 257 1024)")  # fmt: skip
    ap.add_argument("--err-sizes", type=int, nargs="*", default=[4096, 8192],
                    help="sizes n of the errors stage (default 4096 8192)")  # fmt: skip
    ap.add_argument("--err-phi", type=float, nargs="*", default=[0.0, 0.5, 1.0, 2.0, 4.0],
                    help="exp_rand phi of the errors stage (default 0 0.5 1 2 4)")  # fmt: skip
    ap.add_argument("--sustain", type=float, default=4.0,
                    help="seconds per sustained timing (default 4)")  # fmt: skip
    ap.add_argument("--moduli", type=int, nargs="*", default=[14, 15, 16],
                    help="ozaki2 fp64 moduli counts besides auto (default 14 15 16)")  # fmt: skip
    ap.add_argument("--fp32-moduli", type=int, nargs="*", default=[7, 8],
                    help="fixed moduli counts of ozaki2 fp32 (default 7 8)")  # fmt: skip
    ap.add_argument("--emu-bits", type=int, nargs="*", default=list(EMU_BITS),
                    help="fixed mantissa-bit counts of cuBLAS's FP64 emulation (besides its "
                    f"dynamic default; default {' '.join(map(str, EMU_BITS))})")  # fmt: skip
    ap.add_argument("--commit", default="",
                    help="git commit recorded in the rows (default: this checkout's)")  # fmt: skip
    ap.add_argument("--combine", type=Path, nargs="*", default=[],
                    help="no GPU: join these ozaki_bench.csv files (rows keep their commit) into "
                    "OUT/ozaki_bench.csv and evaluate the acceptance on them")  # fmt: skip
    ap.add_argument("--skip", nargs="*", default=[], choices=["identity", "speed", "errors"],
                    help="stages not to run (default: none)")  # fmt: skip
    args = ap.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        print(f"error: --out {args.out}: not a directory (expected a new directory name)",
              file=sys.stderr)  # fmt: skip
        return 2
    taken = [name for name in OUTPUT_FILES if (args.out / name).exists()]
    if taken:  # never overwrite an earlier run (or the results the docs cite)
        print(
            f"error: --out {args.out} already holds {', '.join(taken)} from an earlier run; "
            "name a new directory",
            file=sys.stderr,
        )
        return 2
    if not args.combine and set(args.skip) == {"identity", "speed", "errors"}:
        print("error: --skip identity speed errors skips every stage: nothing to run (skip "
              "fewer, or join earlier tables with --combine)", file=sys.stderr)  # fmt: skip
        return 2
    if not args.combine:
        if exit_without_gpu("python -m precision.gemm.ozaki_bench (without --combine)"):
            return 2
    if args.combine:  # every input read and checked before --out is made
        frames, problems = read_bench_tables(args.combine)
        if problems:
            print(f"error: --combine: cannot use {'; '.join(problems)}", file=sys.stderr)
            return 2
    problem = directory_destination_problem(args.out, "--out")
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if args.combine:
        return combine(frames, args.out)
    from precision.provenance import collect

    prov = collect()
    if args.commit:
        prov["git_commit"] = args.commit
    try:
        from precision.vendor.cublas import cublas_version

        prov["cublas"] = cublas_version()
    except Exception as exc:
        prov["cublas"] = f"unknown: {exc}"
    log("provenance", prov)
    ok = True
    rows: list[dict] = []

    def flush() -> None:
        keys = list(COLUMNS)
        for r in rows:
            keys += [k for k in r if k not in keys]
        keys += [k for k in prov if k not in keys]
        with open(args.out / BENCH_CSV, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            for r in rows:
                w.writerow({**prov, **r})

    import traceback

    stages = [
        ("identity", lambda: identity(args.out, args.identity_sizes)),
        ("errors", lambda: errors(args.err_sizes, args.moduli, args.fp32_moduli, args.err_phi,
                                  args.emu_bits)),
        ("speed", lambda: speed(args.sizes, args.sustain, args.moduli, args.fp32_moduli,
                                args.emu_bits)),
    ]  # fmt: skip
    for name, stage in stages:
        if name in args.skip:
            continue
        t0 = time.perf_counter()
        try:
            res = stage()
        except Exception:  # report and go on to the next stage
            traceback.print_exc()
            ok = False
            continue
        log(f"stage {name} took {time.perf_counter() - t0:.1f} s")
        if name == "identity":
            ok &= bool(res)
        else:
            rows += list(res)  # type: ignore[call-overload]
            flush()
    if rows:
        text = acceptance(rows)
        (args.out / ACCEPTANCE_MD).write_text(text)
        log(text)
    return 0 if ok else 1


if __name__ == "__main__":
    run_main(main)
