"""GPU check of the fused INT8 GEMM + modular epilogue (``oz2_gemm_mod``): build, exactness
against cuBLAS's exact int32 product reduced on the device with integer ops, and speed against
cuBLAS ``gemmStridedBatchedEx`` (int8 -> int32) in the same process.

Run on a machine with an sm_90 GPU: ``python -m precision.gemm.ozaki_gemm_check [--quick]``.
Prints everything; exits 1 if any exactness case differs.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from precision.console import run_main
from precision.gemm.ozaki_gemm_launch import SOURCE, gemm_mod
from precision.kernels.build import KERNEL_DIR, NUMERIC_FLAGS, run_nvcc

MODULI3 = (256, 255, 173)
#: the 15 largest moduli <= 256 that are pairwise coprime, picked greedily (timing only)
MODULI15 = (256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 211, 199, 197, 193)

_FILL = r"""
extern "C" __global__ void fill_i8(signed char* x, unsigned long long n, unsigned long long seed) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    unsigned long long z = (i + seed * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
    x[i] = (signed char)(z >> 56);
  }
}
"""


def ptxas_report() -> str:
    """ptxas -v of the kernel (registers, shared memory, spills); raises on serialised wgmma."""
    with tempfile.TemporaryDirectory() as tmp:
        return run_nvcc(
            [
                "-gencode",
                "arch=compute_90a,code=sm_90a",
                "-cubin",
                "-O3",
                "-std=c++17",
                *NUMERIC_FLAGS,
                "-Xptxas",
                "-v",
                "-o",
                str(Path(tmp) / "k.cubin"),
                str(KERNEL_DIR / SOURCE),
            ],
            what="checking ozaki2_gemm.cu",
        )


def random_i8(cp: Any, shape: tuple[int, ...], seed: int) -> Any:
    """Uniform int8 in [-128, 127] from a hash of the index (no large temporaries)."""
    x = cp.empty(shape, dtype=cp.int8)
    kern = cp.RawKernel(_FILL, "fill_i8")
    kern((1024,), (256,), (x, np.uint64(x.size), np.uint64(seed)))
    return x


def reference(
    cp: Any, ares: Any, bres: Any, M: int, nbp: int, kp: int, mods: tuple[int, ...]
) -> Any:
    """cuBLAS's exact int32 product reduced to the symmetric residue with integer ops."""
    from precision.vendor.cublas import int8_gemm_strided_batched

    L = len(mods)
    C = cp.empty((L, M, nbp), dtype=cp.int32)
    int8_gemm_strided_batched(cp, bres, ares, C, M, nbp, kp, L)
    out = cp.empty((L, M, nbp), dtype=cp.int8)
    for l, m in enumerate(mods):
        h = m // 2
        out[l] = ((C[l].astype(cp.int64) + h) % m - h).astype(cp.int8)
    return out, C


def run_case(
    cp: Any, name: str, ares: Any, bres: Any, mods: tuple[int, ...], cpu: bool = False
) -> bool:
    L, M, kp = ares.shape
    nbp = bres.shape[1]
    R = cp.full((L, M, nbp), 99, dtype=cp.int8)
    gemm_mod(cp, ares, bres, R, M, nbp, kp, L, mods)
    ref, C = reference(cp, ares, bres, M, nbp, kp, mods)
    bad = int(cp.count_nonzero(R != ref))
    absmax = int(cp.abs(C.astype(cp.int64)).max())
    ok = bad == 0
    if cpu:  # an independent int64 product on the host as well
        a, b = cp.asnumpy(ares).astype(np.int64), cp.asnumpy(bres).astype(np.int64)
        for l, m in enumerate(mods):
            c = a[l] @ b[l].T
            h = m // 2
            ok &= bool(np.array_equal(cp.asnumpy(R[l]).astype(np.int64), (c + h) % m - h))
    print(
        f"exact {name:28s} M={M} nbp={nbp} kp={kp} L={L} max|C|={absmax}: "
        f"{'identical' if ok else f'DIFFERS ({bad} elements)'}",
        flush=True,
    )
    return ok


def exactness(cp: Any) -> bool:
    ok = True
    shapes = [
        (256, 384, 384),
        (2048, 2048, 2048),
        (200, 272, 400),
        (128, 256, 128),
        (384, 512, 1040),
    ]
    for i, (M, nbp, kp) in enumerate(shapes):
        L = len(MODULI3)
        a = random_i8(cp, (L, M, kp), 10 * i + 1)
        b = random_i8(cp, (L, nbp, kp), 10 * i + 2)
        ok &= run_case(cp, "random", a, b, MODULI3, cpu=M * nbp * kp <= 2**26)
    # largest |C|: every entry -128 (C = 2^14 kp), and mixed signs (B rows alternately 127)
    for M, nbp, kp in [(256, 384, 2048), (128, 256, 130944)]:
        L = len(MODULI3)
        a = cp.full((L, M, kp), -128, dtype=cp.int8)
        b = cp.full((L, nbp, kp), -128, dtype=cp.int8)
        ok &= run_case(cp, "all -128", a, b, MODULI3)
        b[:, 1::2, :] = 127
        a[:, 3::4, :] = 127
        ok &= run_case(cp, "-128/127 mixed", a, b, MODULI3)
    return ok


def time_ms(cp: Any, fn: Any, reps: int = 10, warm: int = 2) -> float:
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1))
    return float(np.median(times))


EXACT_FULL: list[bool] = []  # the full-size comparisons made by speed()
Variant = tuple[str, tuple[str, ...]]  # name, nvcc -D flags


def speed(cp: Any, n: int, L: int, variants: list[Variant]) -> None:
    """Median time of >= 10 calls: cuBLAS int8 -> int32 strided batched, each variant of our
    kernel, cuBLAS again (drift check); TOPS = 2 M N K L / t."""
    from precision.vendor.cublas import int8_gemm_strided_batched

    M = nbp = kp = n
    a = random_i8(cp, (L, M, kp), 101)
    b = random_i8(cp, (L, nbp, kp), 102)
    R = cp.empty((L, M, nbp), dtype=cp.int8)
    C = cp.empty((L, M, nbp), dtype=cp.int32)
    dmods = cp.asarray(np.array(MODULI15[:L], dtype=np.int32))
    ops = 2.0 * M * nbp * kp * L

    def cublas() -> None:
        int8_gemm_strided_batched(cp, b, a, C, M, nbp, kp, L)

    def report(what: str, t: float, t_ref: float) -> None:
        print(
            f"speed n={n} L={L}: {what:34s} {t:9.3f} ms {ops / t / 1e9:6.0f} TOPS "
            f"({t_ref / t:.3f}x cuBLAS)",
            flush=True,
        )

    t_cublas = time_ms(cp, cublas)
    report("cuBLAS int8->int32 strided batched", t_cublas, t_cublas)
    for name, flags in variants:

        def ours(flags: tuple[str, ...] = flags) -> None:
            gemm_mod(cp, a, b, R, M, nbp, kp, L, dmods, flags=flags)

        report(f"oz2_gemm_mod [{name}]", time_ms(cp, ours), t_cublas)
        bad = 0  # the timed output against cuBLAS's product (C) reduced with integer ops
        for l, m in enumerate(MODULI15[:L]):
            h = m // 2
            bad += int(cp.count_nonzero(R[l] != ((C[l].astype(cp.int64) + h) % m - h)))
        print(f"  full-size output vs cuBLAS mod m: {'identical' if bad == 0 else bad}", flush=True)
        EXACT_FULL.append(bad == 0)
    report("cuBLAS again", time_ms(cp, cublas), t_cublas)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m precision.gemm.ozaki_gemm_check", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="exactness and n = 8192 only")
    parser.add_argument("--variants", action="store_true", help="also time raster variants")
    args = parser.parse_args(argv)
    from precision.gpu import exit_without_gpu, require_gpu

    if exit_without_gpu("python -m precision.gemm.ozaki_gemm_check"):
        return 2
    print(ptxas_report(), flush=True)
    cp = require_gpu("ozaki_gemm_check")
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}", flush=True)
    ok = exactness(cp)
    variants: list[Variant] = [("default", ())]
    if args.variants:
        variants += [(f"raster {g}", (f"-DOZ_RASTER_GROUP={g}",)) for g in (8, 32)]
    speed(cp, 8192, 15, variants)
    cp.get_default_memory_pool().free_all_blocks()
    if not args.quick:
        speed(cp, 16384, 15, variants[:1])
    ok &= all(EXACT_FULL)
    print("EXACT: all identical" if ok else "EXACT: FAILURES", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    run_main(main)
