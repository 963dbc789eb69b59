"""Benchmark and bit-identity check of the Ozaki methods on a GPU.

``python -m precision.gemm.ozaki_bench --out DIR [--sizes 8192 16384] [--sustain 4]``

1. **Bit identity**: ``ozaki2`` CUDA vs emulator at n in {16, 100, 257, 1024}, phi in
   {0, 1, 4}, targets fp64/fp32, ``terms="auto"`` and a fixed count, NaN/Inf/subnormals
   injected in some cases. Writes ``DIR/ozaki_identity.csv`` and the small cases (inputs and
   CUDA outputs) to ``DIR/ozaki_cuda_cases.npz`` for tests/data.
2. **Speed** at each size: DGEMM (cuBLAS via CuPy), SGEMM, cuBLAS's fixed-point FP64
   emulation (eager strategy, when the library exposes it), ozaki2 fp64 for several moduli
   counts and ``auto``, ozaki2 fp32. Burst: median of 10 calls; sustained: back to back for
   ``--sustain`` seconds (:func:`precision.telemetry.time_gpu_sampled`), with board power.
3. **Errors** at ``--err-n`` (default 4096) for phi in {0, 0.5, 1, 2, 4}: median / max
   elementwise relative error against :func:`precision.reference.exact_matmul` (on the GPU).

Rows go to ``DIR/ozaki_bench.csv`` with columns method, target, fmt, terms, backend, n, phi,
tflops, tflops_sustained, err_median, err_max, then extras and provenance.
"""

from __future__ import annotations

import argparse
import csv
import functools
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

COLUMNS = [
    "method", "target", "fmt", "terms", "backend", "n", "phi", "tflops", "tflops_sustained",
    "err_median", "err_max",
]  # fmt: skip


def log(*a: Any) -> None:
    print(*a, flush=True)


def exp_rand(rng: np.random.Generator, shape: tuple[int, int], phi: float) -> np.ndarray:
    from precision.distributions import get_distribution

    return get_distribution("exp_rand").func(rng, shape, phi=phi)


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


def identity(out: Path, sizes: list[int]) -> bool:
    import cupy as cp

    from precision.gemm.ozaki import ozaki_gemm
    from precision.gemm.ozaki_cuda import ozaki2_cuda

    rows: list[dict] = []
    cases: dict[str, Any] = {}
    all_ok = True
    for n in sizes:
        for phi in (0.0, 1.0, 4.0):
            for target in ("fp64", "fp32"):
                big = n >= 1024  # the emulator's time: only auto terms with specials there
                for terms in ("auto",) if big else ("auto", 14 if target == "fp64" else 7):
                    for special in (True,) if big else (False, True):
                        rng = np.random.default_rng(1000 * n + int(10 * phi))
                        A, B = exp_rand(rng, (n, n), phi), exp_rand(rng, (n, n), phi)
                        if special:
                            inject_specials(A, B, rng)
                        t0 = time.perf_counter()
                        Dg, run = ozaki2_cuda(cp.asarray(A), cp.asarray(B), target=target,
                                              terms=terms)  # fmt: skip
                        dg = cp.asnumpy(Dg)
                        t1 = time.perf_counter()
                        de = ozaki_gemm(A, B, method="ozaki2", fmt="int8", target=target,
                                        terms=terms)  # fmt: skip
                        t2 = time.perf_counter()
                        u = f"u{dg.itemsize}"
                        diff = int(np.count_nonzero(dg.view(u) != de.view(u)))
                        all_ok &= diff == 0
                        rows.append(
                            dict(n=n, phi=phi, target=target, terms=terms,
                                 moduli=run.plan.terms, specials=special, differ=diff,
                                 cuda_s=round(t1 - t0, 3), emulator_s=round(t2 - t1, 3))
                        )  # fmt: skip
                        log("identity", rows[-1])
                        keep = n == 16 or (n == 100 and terms == "auto")
                        keep |= n == 257 and phi == 1.0 and terms == "auto" and special
                        if keep:
                            key = f"case_n-{n}_phi-{phi:g}_target-{target}_terms-{terms}"
                            key += f"_specials-{int(special)}"
                            cases[key + "_A"], cases[key + "_B"] = A, B
                            cases[key + "_D"] = dg
    with open(out / "ozaki_identity.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    np.savez_compressed(out / "ozaki2_cuda_h200.npz", **cases)
    log("IDENTITY", "ALL BIT-IDENTICAL" if all_ok else "DIFFERENCES FOUND")
    return all_ok


# ----------------------------------------------------------------------- cuBLAS emulation


def cublas_fp64_emulated(cp: Any) -> tuple[Any, str]:
    """:func:`precision.vendor.cublas.fp64_emulated_gemm` (eager strategy)."""
    from precision.vendor.cublas import fp64_emulated_gemm

    return fp64_emulated_gemm()


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
    sizes: list[int], sustain: float, moduli: list[int], fp32_moduli: list[int]
) -> list[dict]:
    import cupy as cp

    emu, why = cublas_fp64_emulated(cp)
    if emu is None:
        log("cuBLAS FP64 emulation:", why)
    rows: list[dict] = []
    for n in sizes:
        rows += _speed_at(cp, n, sustain, moduli, fp32_moduli, emu)
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _first(f: Any, *args: Any, **kw: Any) -> Any:
    return f(*args, **kw)[0]


def _speed_at(
    cp: Any, n: int, sustain: float, moduli: list[int], fp32_moduli: list[int], emu: Any
) -> list[dict]:
    from precision.gemm.ozaki_cuda import ozaki2_cuda
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
    if emu is not None:
        cands.append((meta("cublas_fp64_emulated_eager", "fp64", "int8", "", "cublas"),
                      lambda: emu(A, B)))  # fmt: skip
    for tgt, counts in (("fp64", [*moduli, "auto"]), ("fp32", fp32_moduli)):
        for t in counts:
            fn = functools.partial(_first, ozaki2_cuda, A, B, target=tgt, terms=t)
            cands.append((meta("ozaki2", tgt, "int8", t, "cuda"), fn))
    for t in (16,):  # what the 1.5x workspace bound costs: the same with 4x
        fn = functools.partial(_first, ozaki2_cuda, A, B, target="fp64", terms=t,
                               workspace_factor=4.0)  # fmt: skip
        cands.append(({**meta("ozaki2", "fp64", "int8", t, "cuda"), "workspace_factor": 4.0}, fn))
    rows = []
    for md, fn in cands:
        try:
            r = {**md, **base, **timed(cp, fn, flops, sustain)}
        except Exception as exc:
            log("FAILED", md, repr(exc))
            continue
        if md["method"] == "ozaki2":
            _, run = ozaki2_cuda(A, B, target=md["target"], terms=md["terms"], timed=True,
                                 workspace_factor=md.get("workspace_factor", 1.5))  # fmt: skip
            r["moduli"] = run.plan.terms
            r["workspace_gb"] = run.workspace_bytes / 1e9
            r["workspace_x_input"] = run.workspace_bytes / (A.nbytes + B.nbytes)
            r["col_block"] = run.nb
            for k, v in run.phase_ms.items():
                r[f"ms_{k}"] = v
        rows.append(r)
        log("speed", {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
    return rows


# -------------------------------------------------------------------------------- errors


def errors(n: int, moduli: list[int], fp32_moduli: list[int]) -> list[dict]:
    import cupy as cp

    from precision.gemm.ozaki_cuda import ozaki2_cuda
    from precision.metrics import error_metrics
    from precision.reference import exact_matmul
    from precision.vendor.cublas import cublas_gemm

    rows = []
    emu, _ = cublas_fp64_emulated(cp)
    for phi in (0.0, 0.5, 1.0, 2.0, 4.0):
        rng = np.random.default_rng(int(phi * 100) + n)
        Ah, Bh = exp_rand(rng, (n, n), phi), exp_rand(rng, (n, n), phi)
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
        if emu is not None:
            add(dict(method="cublas_fp64_emulated_eager", target="fp64", fmt="int8", terms="",
                     backend="cublas"), emu(A, B))  # fmt: skip
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--sizes", type=int, nargs="*", default=[8192, 16384])
    ap.add_argument("--identity-sizes", type=int, nargs="*", default=[16, 100, 257, 1024])
    ap.add_argument("--err-n", type=int, default=4096)
    ap.add_argument("--sustain", type=float, default=4.0)
    ap.add_argument("--moduli", type=int, nargs="*", default=[14, 15, 16, 17])
    ap.add_argument("--fp32-moduli", type=int, nargs="*", default=[7, 8])
    ap.add_argument("--commit", default="")
    ap.add_argument("--skip", nargs="*", default=[], choices=["identity", "speed", "errors"])
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
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
        with open(args.out / "ozaki_bench.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            for r in rows:
                w.writerow({**prov, **r})

    import traceback

    stages = [
        ("identity", lambda: identity(args.out, args.identity_sizes)),
        ("errors", lambda: errors(args.err_n, args.moduli, args.fp32_moduli)),
        ("speed", lambda: speed(args.sizes, args.sustain, args.moduli, args.fp32_moduli)),
    ]
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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
