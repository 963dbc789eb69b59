"""Check of the Ozaki-I GPU path (``precision/kernels/ozaki1.cu`` through
:func:`precision.gemm.ozaki1_cuda.ozaki1_cuda`) without a GPU: the kernel source compiled by
g++ with host shims (:mod:`precision.gemm.ozaki_host`'s harness), CuPy replaced by numpy,
cuBLAS's slice products by exact float64 products, and the outputs compared bit for bit with
the CPU emulator (:func:`precision.gemm.ozaki.ozaki_gemm`, ``backend="emulator"``).

The cases cover both digit formats, both targets, one to eight slices, concatenated and
K-blocked slice products (several combine groups, so the 128-bit accumulator is carried),
several row and column blocks (small workspace factors), rectangular and empty operands, and
NaN/±Inf/Inf·0/zero/subnormal lines. :func:`pieces_cover_every_pair` checks the GEMM plan
itself: every slice pair ``s + t <= T + 1`` over every k exactly once, each sum within its
exactness bound.

    python -m precision.gemm.ozaki1_cuda_check      # prints one line per case, then ALL OK
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import numpy as np

from precision.console import run_main
from precision.distributions import get_distribution
from precision.gemm.ozaki import FP16_KBLOCK, OZAKI1_INT8_KMAX, ozaki_gemm

#: a_ij = (U(0,1) - 0.5)·exp(phi·N(0,1)) with a correctly rounded exp (float64), as the runner
#: draws it: the same bits on any host.
_exp_rand = get_distribution("exp_rand").func


def _mock_slice_gemm(cp: Any, fmt: str, adig: Any, bdig: Any, C: Any, plane0: int, piece: Any,
                     mb: int, nbp: int, ld: int) -> None:  # fmt: skip
    """:func:`precision.gemm.ozaki1_cuda.slice_gemm` in numpy: the same runs of digits (flat
    offsets in rows of ``ld``), exact float64 products, written to the same planes."""
    flat_a = np.asarray(adig).reshape(-1)
    flat_b = np.asarray(bdig).reshape(-1)
    if fmt == "fp16":
        flat_a, flat_b = flat_a.view(np.float16), flat_b.view(np.float16)
    a = flat_a[: mb * ld].reshape(mb, ld)
    b = flat_b[: nbp * ld].reshape(nbp, ld)
    out = np.asarray(C).reshape(-1)
    plane = mb * nbp
    for q in range(piece.batch):
        lo_a, lo_b = piece.a_off + q * piece.stride, piece.b_off + q * piece.stride
        prod = (
            a[:, lo_a : lo_a + piece.length].astype(np.float64)
            @ b[:, lo_b : lo_b + piece.length].astype(np.float64).T
        )
        dst = out[(plane0 + q) * plane : (plane0 + q + 1) * plane]
        dst[...] = prod.reshape(-1).astype(dst.dtype)


@contextlib.contextmanager
def _ozaki1_on_the_cpu() -> Iterator[Any]:
    """:mod:`precision.gemm.ozaki1_cuda` with its kernels, its statistics (scheme II's) and
    its slice products on the CPU; yields the module, everything restored on exit."""
    from precision.gemm import ozaki1_cuda as o1c
    from precision.gemm.ozaki_host import MockModule, kernels_on_the_cpu

    saved = (o1c._module, o1c.slice_gemm)
    with kernels_on_the_cpu():
        setattr(o1c, "_module", MockModule)  # noqa: B010 (a cached function, patched)
        o1c.slice_gemm = _mock_slice_gemm
        try:
            yield o1c
        finally:
            o1c._module, o1c.slice_gemm = saved


def pieces_cover_every_pair() -> dict[str, Any]:
    """Every ``(T, K, fmt)`` plan of :func:`~precision.gemm.ozaki1_cuda.slice_pieces` over a
    grid: each pair ``(s, t)`` with ``s + t = g <= T + 1`` meets each k < K exactly once (the
    A and B offsets of one product step through the same pairs), and no sum exceeds its
    exactness bound (int8: 127·127·K' <= 2^31 - 1; fp16: K' <= 1024 nonzero products)."""
    from precision.gemm.ozaki1_cuda import PAD, slice_pieces

    bad = 0
    plans = 0
    for fmt in ("int8", "fp16"):
        for T in range(1, 9):
            for K in (1, 7, 16, 100, 520, 1024, 1025, 1500, 2048, 5000, 16644, 16645, 40000):
                if fmt == "int8" and K > OZAKI1_INT8_KMAX:
                    continue
                kp = -(-K // PAD) * PAD
                limit = OZAKI1_INT8_KMAX if fmt == "int8" else FP16_KBLOCK
                # one count per (s, t, k), s and t 1-based: key = ((s - 1)·T + t - 1)·K + k
                seen = np.zeros(T * T * K, dtype=np.int64)
                for pc in slice_pieces(T, K, kp, fmt):
                    x = np.arange(pc.length)
                    for q in range(pc.batch):
                        su, k = np.divmod(pc.a_off + q * pc.stride + x, kp)
                        r, kb = np.divmod(pc.b_off + q * pc.stride + x, kp)
                        bad += int(np.count_nonzero(k != kb))
                        live = k < K
                        t, su = T - r[live], su[live]
                        inside = (t >= 1) & (t <= T) & (su >= 0) & (su < T)
                        bad += int(np.count_nonzero(~inside))
                        t, su, kl = t[inside], su[inside], k[live][inside]
                        bad += int(np.count_nonzero(su + 1 + t != pc.g))
                        bad += pc.shift != 7 * (T + 1 - pc.g)
                        bad += int(np.count_nonzero(live)) > limit
                        np.add.at(seen, (su * T + t - 1) * K + kl, 1)
                want = np.zeros_like(seen)
                for g in range(2, T + 2):
                    for s_ in range(1, g):
                        want[((s_ - 1) * T + g - s_ - 1) * K : ((s_ - 1) * T + g - s_) * K] = 1
                bad += int(np.count_nonzero(seen != want))
                plans += 1
    return {"plans": plans, "bad": bad, "ok": bad == 0}


def _operands(m: int, k: int, n: int, phi: float, seed: int, specials: bool
              ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    rng = np.random.default_rng(seed)
    A = _exp_rand(rng, (m, k), phi=phi)
    B = _exp_rand(rng, (k, n), phi=phi)
    if specials and m > 6 and n > 6 and k > 6:
        A[1, 2] = np.nan
        A[2, 3] = np.inf
        A[3, :] = 0.0
        A[4, 1] = -np.inf  # meets B[1, 5] = 0: Inf·0
        B[1, 5] = 0.0
        A[5, :] *= 2.0**-1060  # a subnormal row
        B[:, 6] = 0.0
        B[0, 4] = -np.inf
        B[2, 1] = 5e-320
    return A, B


#: (m, k, n, phi, fmt, target, terms, workspace factor, specials)
CASES: tuple[tuple[int, int, int, float, str, str, int | str, float, bool], ...] = (
    (70, 130, 90, 1.0, "int8", "fp64", "auto", 1.5, False),
    (70, 130, 90, 4.0, "fp16", "fp64", 8, 1.5, False),
    (40, 1500, 30, 1.0, "fp16", "fp64", 6, 1.5, False),  # K blocks + remainder, 3 groups
    (40, 1500, 30, 0.5, "fp16", "fp32", 3, 0.2, False),
    (33, 600, 50, 2.0, "int8", "fp32", 4, 1.5, False),
    (100, 60, 120, 1.0, "int8", "fp64", 8, 0.1, True),  # several row and column blocks
    (100, 60, 120, 1.0, "fp16", "fp32", 5, 0.1, True),
    (20, 9, 20, 0.0, "int8", "fp64", 1, 1.5, True),
    (1, 1, 1, 1.0, "int8", "fp64", 8, 1.5, False),
    (3, 17, 5, 4.0, "fp16", "fp64", "auto", 1.5, False),
    (0, 5, 4, 1.0, "int8", "fp64", 3, 1.5, False),
    (4, 5, 0, 1.0, "fp16", "fp32", 3, 1.5, False),
    (3, 0, 2, 1.0, "int8", "fp64", 2, 1.5, False),
)
#: Cases run again with float32 operands (the "f32" kernels: A and B read as float32), against
#: the emulator on the same float32 arrays.
F32_CASES: tuple[tuple[int, int, int, float, str, str, int | str, float, bool], ...] = (
    (37, 53, 29, 2.0, "int8", "fp64", "auto", 1.5, True),
    (100, 60, 120, 1.0, "fp16", "fp32", 5, 0.1, True),
    (40, 1500, 30, 1.0, "fp16", "fp64", 6, 1.5, False),
    (33, 600, 50, 2.0, "int8", "fp32", 4, 1.5, False),
)


def host_pipeline() -> list[dict[str, Any]]:
    """:func:`~precision.gemm.ozaki1_cuda.ozaki1_cuda` on the CPU for :data:`CASES` (float64)
    and :data:`F32_CASES` (float32, which the digit and statistics kernels must be handed as
    float32: ``read_as``), against the emulator bit for bit (``terms="auto"``: also the
    count)."""
    from precision.gemm.ozaki_host import INPUT_READS, f32_operands

    results = []
    runs = [(c, np.float64) for c in CASES] + [(c, np.float32) for c in F32_CASES]
    with _ozaki1_on_the_cpu() as o1c:
        for i, ((m, k, n, phi, fmt, target, terms, wf, specials), dtype) in enumerate(runs):
            A, B = _operands(m, k, n, phi, seed=100 + i, specials=specials)
            if dtype == np.float32:  # (with a float32 subnormal and the largest float32)
                A, B = f32_operands(A, B)
            INPUT_READS.clear()
            D, run = o1c.ozaki1_cuda(A, B, fmt=fmt, target=target, terms=terms,
                                     workspace_factor=wf)  # fmt: skip
            ref = ozaki_gemm(A, B, method="ozaki1", fmt=fmt, target=target, terms=terms)
            got = np.asarray(D)
            bits = np.uint64 if got.dtype == np.float64 else np.uint32
            diff = int(np.count_nonzero(got.view(bits) != ref.view(bits)))
            r = {"m": m, "k": k, "n": n, "phi": phi, "fmt": fmt, "target": target,
                 "terms": str(terms), "T": run.plan.terms, "blocks": [run.mb, run.nb],
                 "gemm_calls": run.gemm_calls, "planes": run.planes,
                 "workspace_bytes": run.workspace_bytes,
                 "shape_ok": got.shape == ref.shape and got.dtype == ref.dtype,
                 "d_diff": diff, "dtype": np.dtype(dtype).name,
                 "read_as": sorted(set(INPUT_READS))}  # fmt: skip
            reads_ok = set(r["read_as"]) <= {r["dtype"]}  # (no kernel reads an empty side)
            r["ok"] = diff == 0 and r["shape_ok"] and reads_ok
            results.append(r)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m precision.gemm.ozaki1_cuda_check", description=__doc__.split("\n\n")[0]
    )
    ap.parse_args(argv)
    cover = pieces_cover_every_pair()
    print("slice pieces:", json.dumps(cover), flush=True)
    ok = bool(cover["ok"])
    for r in host_pipeline():
        ok &= r["ok"]
        print("host pipeline (ozaki1_cuda on the CPU):", json.dumps(r), flush=True)
    print("ALL OK" if ok else "FAILURES")
    return 0 if ok else 1


if __name__ == "__main__":
    run_main(main)
