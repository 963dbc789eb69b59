"""Ozaki scheme I on the GPU: our kernels (``precision/kernels/ozaki1.cu``) for the slices and
for the exact sum of the slice products with its one rounding; the slice products are cuBLAS
GEMMs; the line statistics are scheme II's kernels (:func:`precision.gemm.ozaki_cuda.
device_line_stats`). The spec is :func:`precision.gemm.ozaki.ozaki1_emulate`'s, and every step
before the final rounding is exact integer arithmetic, so the outputs equal the CPU
emulator's bit for bit.

The products of one ``g = s + t`` (``s = 1 .. g-1``) are **one GEMM over a concatenated K**:
A's digits are stored ``[i][s-1][k]`` and B's ``[j][T-t][k]`` (B's slices in reverse order),
so the pairs of one ``g`` are a contiguous run of ``(g-1)·kp`` digits in both operands
(leading dimension ``T·kp``). A run is cut into pieces that keep every sum exact:

* ``fmt="int8"``: ``CUDA_R_8I`` -> ``CUDA_R_32I`` (``cublasGemmStridedBatchedEx``, compute
  ``32I``), at most :data:`~precision.gemm.ozaki.OZAKI1_INT8_KMAX` nonzero products per sum
  (``127·127·K' <= 2^31 - 1``): at most ``OZAKI1_INT8_KMAX // K`` pairs per piece;
* ``fmt="fp16"``: fp16 digits, fp32 accumulation and output (compute ``32F``), at most
  :data:`~precision.gemm.ozaki.FP16_KBLOCK` nonzero products per sum (``127·127·1024 <
  2^24``, so every partial sum is an exact fp32 integer): ``FP16_KBLOCK // K`` pairs per piece
  for ``K <= 1024``, else every pair in K blocks of 1024 (one batched call per pair).

Each piece writes int32 (fp32) planes; ``oz1_combine_*`` adds a group of planes, each times
``2^(7(T+1-g))``, into an exact 128-bit integer per output and, after the last group, rounds
``X·2^(emax_a + emax_b - 7T - 7)`` once to the target (round to nearest even, gradual
underflow, overflow to ±Inf). NaN/±Inf entries are zero in the digits; the flagged outputs get
the values of :func:`~precision.gemm.ozaki.apply_specials`, written on the device
(:func:`~precision.gemm.ozaki_cuda.write_specials`).

Workspace beyond inputs and output: the digits of a block of rows and of a block of columns
(``T·kp`` bytes per line, twice that for fp16), the planes of one group and the 16-byte
accumulators of the output block, blocked (:func:`~precision.gemm.ozaki._blocks`) to stay
within ``workspace_factor`` times the size of A and B as the kernels read them
(:func:`~precision.gemm.ozaki.input_bytes`), or half the float64 size of the output where that
is larger (thin K). Two float32 (or float16) operands are read as float32 by the digit and
statistics kernels (converted to double in registers, exact; no float64 copy), as in
:func:`precision.gemm.ozaki_cuda.device_inputs`. CuPy is imported lazily.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from precision.gemm import ozaki_cuda as oc
from precision.gemm.ozaki import (
    FP16_KBLOCK,
    OUTPUT_SHARE,
    OZAKI1_INT8_KMAX,
    TARGETS,
    OzakiPlan,
    _blocks,
    check_args,
    input_bytes,
    make_plan,
    plan_for,
)

SOURCE = "ozaki1.cu"
_THREADS = 256
#: Padding of K (and of the column block): cuBLAS's INT8 / fp16 GEMMs want 16-byte rows.
PAD = 16
#: Most planes one combine pass adds (more are split into groups; the accumulator carries).
GROUP_PLANES = 16


@functools.cache
def _module(inp: str) -> Any:
    """The kernels' module for inputs of kind ``inp`` (:data:`~precision.gemm.ozaki_cuda.IN_FLAGS`;
    no default, so that every call caches under the same key)."""
    return oc.raw_module(SOURCE, "the Ozaki-I kernels", inp)


def _kernel(name: str, inp: str = "f64") -> Any:
    """:func:`~precision.gemm.ozaki_cuda.function_of` this module's kernels (``ozaki1.cu``)."""
    return oc.function_of(_module, name, inp)


@dataclass(frozen=True)
class Piece:
    """One slice-product GEMM: ``batch`` products, each over ``length`` digits starting at
    ``a_off`` of A's digit rows and ``b_off`` of B's (in digits, within a line of ``T·kp``;
    product ``b`` adds ``b·stride`` to both), each written to its own plane, whose weight in
    the sum is ``2^shift`` (``shift = 7(T+1-g)``)."""

    g: int
    a_off: int
    b_off: int
    length: int
    shift: int
    batch: int = 1
    stride: int = 0


def slice_pieces(T: int, K: int, kp: int, fmt: str) -> list[Piece]:
    """The slice-product GEMMs of scheme I with ``T`` slices and K (padded to ``kp``): for each
    ``g = 2 .. T+1`` the pairs ``s = 1 .. g-1`` (A slice ``s``, B slice ``t = g - s``, stored
    at ``r = T - t``) in runs that keep every sum exact (module docstring)."""
    out: list[Piece] = []
    limit = OZAKI1_INT8_KMAX if fmt == "int8" else FP16_KBLOCK
    per_run = max(1, limit // max(K, 1))
    for g in range(2, T + 2):
        shift = 7 * (T + 1 - g)
        if K > limit:  # fp16 only (int8's K is checked against the limit): one pair at a time
            full, rest = divmod(K, FP16_KBLOCK)
            for s in range(1, g):
                a0, b0 = (s - 1) * kp, (T - g + s) * kp
                if full:
                    out.append(Piece(g, a0, b0, FP16_KBLOCK, shift, full, FP16_KBLOCK))
                if rest:
                    off = full * FP16_KBLOCK
                    out.append(Piece(g, a0 + off, b0 + off, kp - off, shift))
            continue
        for s0 in range(1, g, per_run):
            pairs = min(per_run, g - s0)
            out.append(Piece(g, (s0 - 1) * kp, (T - g + s0) * kp, pairs * kp, shift))
    return out


def _groups(pieces: list[Piece]) -> list[list[Piece]]:
    """Consecutive pieces in groups of at most :data:`GROUP_PLANES` planes (a piece with a
    larger batch is a group of its own)."""
    groups: list[list[Piece]] = []
    planes = GROUP_PLANES
    for pc in pieces:
        if planes + pc.batch > GROUP_PLANES:
            groups.append([])
            planes = 0
        groups[-1].append(pc)
        planes += pc.batch
    return groups


def slice_gemm(cp: Any, fmt: str, adig: Any, bdig: Any, C: Any, plane0: int, piece: Piece,
               mb: int, nbp: int, ld: int) -> None:  # fmt: skip
    """``C[plane0 + b] = A_run(b) @ B_run(b)^T`` for the piece's ``batch`` products: A's run
    is ``adig[i, a_off + b·stride : + length]`` per row ``i < mb``, B's likewise per column
    ``j < nbp`` (rows of ``ld = T·kp`` digits). int8 -> int32 or fp16 -> fp32, exact (the
    pieces' lengths, :func:`slice_pieces`). cuBLAS column-major "TN": ``C^T = B_run ·
    A_run^T``."""
    from precision.vendor.cublas import exact_gemm_batched

    item = 1 if fmt == "int8" else 2
    exact_gemm_batched(
        cp, fmt,
        bdig.data.ptr + item * piece.b_off, adig.data.ptr + item * piece.a_off,
        C.data.ptr + 4 * plane0 * mb * nbp,
        m=nbp, n=mb, k=piece.length, ld=ld, stride_b=piece.stride, stride_a=piece.stride,
        batch=piece.batch,
    )  # fmt: skip


@dataclass
class Ozaki1Run:
    """What one call did: the plan, the blocks (rows x columns), the GEMM calls, the planes,
    the workspace bytes and, when timed, device milliseconds per phase (``stats``,
    ``split``, ``gemm``, ``combine``, ``specials``)."""

    plan: OzakiPlan
    mb: int = 0
    nb: int = 0
    gemm_calls: int = 0
    planes: int = 0
    workspace_bytes: int = 0
    phase_ms: dict[str, float] = field(default_factory=dict)


def ozaki1_cuda(
    A: Any,
    B: Any,
    *,
    fmt: str = "int8",
    target: str = "fp64",
    terms: int | str = "auto",
    workspace_factor: float = 1.5,
    timed: bool = False,
) -> tuple[Any, Ozaki1Run]:
    """Scheme I on the GPU for device or host float64/float32 arrays (two float32 operands are
    read as float32, no float64 copy); returns (D as a CuPy array of ``target``'s dtype,
    :class:`Ozaki1Run`). ``timed`` records CUDA events per phase.
    No host synchronisation for an int ``terms`` (NaN/Inf outputs are written on the device,
    :func:`~precision.gemm.ozaki_cuda.write_specials`); ``"auto"`` copies the line statistics
    (a few KB) to the host to pick the count."""
    from precision.gpu import require_gpu

    cp = require_gpu("ozaki1 backend='cuda'")
    check_args("ozaki1", fmt, target)
    A, B = oc.device_inputs(cp, A, B)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"A (M x K) and B (K x N) must agree: got {A.shape} and {B.shape}")
    M, K = A.shape
    N = B.shape[1]
    if fmt == "int8" and K > OZAKI1_INT8_KMAX:
        raise ValueError(
            f"ozaki1 fmt='int8' backend='cuda': K = {K} > {OZAKI1_INT8_KMAX}, the "
            "largest K whose int8 digit products are exact in int32; use fmt='fp16'"
        )
    mark = oc.PhaseTimer(cp, timed)

    mark("start")
    bad_all = cp.empty(M + N, dtype=cp.int32)
    dsa = oc.device_line_stats(cp, A, 1, bad=bad_all[:M])
    oc.apply_shifts(dsa, None)  # emax := 0 for all-zero rows (columns: done inside)
    dsb = oc.device_line_stats(cp, B, 0, bad=bad_all[M:])
    if terms == "auto":
        plan, _, _ = plan_for(A, B, method="ozaki1", fmt=fmt, target=target, terms=terms,
                              stats=(dsa.to_host(), dsb.to_host()))  # fmt: skip
    elif isinstance(terms, int | np.integer) and not isinstance(terms, bool):
        plan = make_plan("ozaki1", fmt, target, int(terms), K)
    else:
        raise ValueError(f"terms must be a positive int or 'auto', got {terms!r}")
    mark("stats")
    T = plan.terms
    p, emin_sub, dtype = TARGETS[plan.target]
    if M == 0 or N == 0:
        return cp.zeros((M, N), dtype=dtype), Ozaki1Run(plan=plan)
    kp = oc.round_up(max(K, 1), PAD)
    item = 1 if fmt == "int8" else 2
    pieces = slice_pieces(T, K, kp, fmt)
    groups = _groups(pieces)
    shifts = cp.asarray(np.array([pc.shift for pc in pieces for _ in range(pc.batch)], np.int32))
    gplanes = max(sum(pc.batch for pc in grp) for grp in groups)
    budget = max(int(workspace_factor * input_bytes(A, B)), int(OUTPUT_SHARE * 8 * M * N))
    out_bytes = 4 * gplanes + (16 if len(groups) > 1 else 0)
    mb, nb = _blocks(M, N, item * T * kp, out_bytes, budget)
    nb = max(PAD, nb // PAD * PAD) if nb < N else nb  # whole GEMM-friendly column blocks
    nbp_max = oc.round_up(nb, PAD)
    dig_type = cp.int8 if fmt == "int8" else cp.uint16
    adig = cp.empty((mb, T, kp), dtype=dig_type)
    bdig = cp.empty((nbp_max, T, kp), dtype=dig_type)
    C = cp.empty(gplanes * mb * nbp_max, dtype=cp.int32 if fmt == "int8" else cp.float32)
    acc = cp.empty(2 * mb * nbp_max if len(groups) > 1 else 2, dtype=cp.int64)
    D = cp.empty((M, N), dtype=dtype)
    suffix = "i8" if fmt == "int8" else "f16"
    inp = oc.input_kind(A)
    digits_rows = _kernel(f"oz1_digits_rows_{suffix}", inp)
    digits_cols = _kernel(f"oz1_digits_cols_{suffix}", inp)
    combine = _kernel(f"oz1_combine_{'i32' if fmt == 'int8' else 'f32'}_"
                      f"{'f64' if plan.target == 'fp64' else 'f32'}")  # fmt: skip
    ld = T * kp
    calls = 0
    for r0 in range(0, M, mb):
        mbc = min(mb, M - r0)
        digits_rows(
            (max(1, -(-mbc * (kp // 4) // _THREADS)),), (_THREADS,),
            (A, np.int32(K), np.int32(r0), np.int32(mbc), np.int32(kp), dsa.emax, np.int32(T),
             adig),
        )  # fmt: skip
        for c0 in range(0, N, nb):
            nbc = min(nb, N - c0)
            nbp = oc.round_up(nbc, PAD)
            digits_cols(
                (-(-nbp // 32), -(-kp // 128)), (_THREADS,),
                (B, np.int32(K), np.int32(N), np.int32(c0), np.int32(nbc), np.int32(nbp),
                 np.int32(kp), dsb.emax, np.int32(T), bdig),
            )  # fmt: skip
            mark("split")
            first_plane = 0
            for gi, grp in enumerate(groups):
                plane = 0
                for pc in grp:
                    slice_gemm(cp, fmt, adig, bdig, C, plane, pc, mbc, nbp, ld)
                    plane += pc.batch
                    calls += 1
                mark("gemm")
                combine(
                    (max(1, -(-mbc * nbc // _THREADS)),), (_THREADS,),
                    (C, np.int32(plane), shifts[first_plane:], np.int32(mbc), np.int32(nbc),
                     np.int32(nbp), acc, np.int32(gi == 0), np.int32(gi == len(groups) - 1),
                     dsa.emax, dsb.emax, np.int32(r0), np.int32(c0), np.int32(T), np.int32(N),
                     np.int32(p), np.int32(emin_sub), D),
                )  # fmt: skip
                first_plane += plane
                mark("combine")
    oc.write_specials(cp, D, A, B, bad_all, dsa.emax, dsb.emax, plan.target)
    mark("specials")
    run = Ozaki1Run(plan=plan, mb=mb, nb=nb, gemm_calls=calls, planes=int(shifts.size))
    run.workspace_bytes = int(adig.nbytes + bdig.nbytes + C.nbytes + acc.nbytes)
    run.phase_ms = mark.totals()
    return D, run
