"""Ozaki scheme II on the GPU: our kernels (``precision/kernels/ozaki2.cu``) for the line
statistics, the int8 residues and the CRT reconstruction, cuBLAS for the INT8 GEMMs.

The steps and formulas are those of :func:`precision.gemm.ozaki.ozaki2_emulate`; every one is
exact (see that module), so outputs equal the emulator's bit for bit. Workspace beyond inputs
and output: the int8 residues of A for all moduli (``L·M·Kp`` bytes) plus, per block of ``nb``
output columns, the residues of B (``L·nbp·Kp``) and the int32 products (``4·L·M·nbp``);
``nb`` is the largest multiple of 16 that keeps the total within ``workspace_factor`` times the
float64 size of A and B (at least 16 columns). K is padded to a multiple of 16 with zero
residues (exact). CuPy is imported lazily; nothing here runs without a GPU.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from precision.gemm.ozaki import (
    _RES_SPLIT,
    INT8_KMAX,
    TARGETS,
    LineStats,
    OzakiPlan,
    apply_specials,
    auto_terms,
    check_args,
    crt_constants,
    make_plan,
    shifts,
)

SOURCE = "ozaki2.cu"
_PAD = 16


@functools.cache
def _module() -> Any:
    from precision.gpu import require_gpu
    from precision.kernels.build import build_cubin

    cp = require_gpu("the Ozaki-II kernels")
    return cp.RawModule(path=str(build_cubin(SOURCE, arch="sm_90")))


def _kernel(name: str) -> Any:
    return _module().get_function(name)


@dataclass
class CudaRun:
    """What one call did: the plan, the column block, workspace bytes and, when timed, the
    device milliseconds of each phase (``stats``, ``split`` (residues), ``gemm``,
    ``reconstruct``, ``specials``)."""

    plan: OzakiPlan
    nb: int = 0
    workspace_bytes: int = 0
    phase_ms: dict[str, float] = field(default_factory=dict)


def device_line_stats(cp: Any, X: Any, axis: int) -> LineStats:
    """:class:`~precision.gemm.ozaki.LineStats` of a device float64 matrix (exact, so equal to
    :func:`precision.gemm.ozaki.line_stats` on the host copy)."""
    rows, cols = X.shape
    if axis == 1:
        mx = cp.zeros(rows, dtype=cp.float64)
        esum = cp.zeros(rows, dtype=cp.int64)
        cnt = cp.zeros(rows, dtype=cp.int64)
        bad = cp.zeros(rows, dtype=cp.int32)
        _kernel("oz_stats_rows")(
            (rows,), (256,), (X, np.int32(rows), np.int32(cols), mx, esum, cnt, bad)
        )
        mx_h = cp.asnumpy(mx)
    else:
        mxb = cp.zeros(cols, dtype=cp.uint64)
        esum = cp.zeros(cols, dtype=cp.uint64)
        cnt = cp.zeros(cols, dtype=cp.uint64)
        bad = cp.zeros(cols, dtype=cp.int32)
        chunk = 256
        grid = ((cols + 255) // 256, (rows + chunk - 1) // chunk)
        _kernel("oz_stats_cols")(
            grid,
            (256,),
            (X, np.int32(rows), np.int32(cols), np.int32(chunk), mxb, esum, cnt, bad),
        )
        mx_h = cp.asnumpy(mxb).view(np.float64)
    mx_h = np.asarray(mx_h, dtype=np.float64)
    return LineStats(
        emax=np.frexp(mx_h)[1].astype(np.int64),
        esum=cp.asnumpy(esum).view(np.int64),
        count=cp.asnumpy(cnt).view(np.int64),
        zero=mx_h == 0,
        bad=cp.asnumpy(bad) != 0,
        nfix=np.zeros(len(mx_h), dtype=np.int64),  # placeholder until the kernels compute it
    )


def _mod_consts(plan: OzakiPlan) -> np.ndarray:
    """Per modulus: m, 2^27 mod m, fl(1/m), the symmetric range's top and bottom, u_l."""
    _, u, _ = crt_constants(plan.moduli)
    rows = [
        (float(m), float((1 << _RES_SPLIT) % m), 1.0 / m, float((m - 1) // 2), float(-(m // 2)), ul)
        for m, ul in zip(plan.moduli, u, strict=True)
    ]
    return np.array(rows, dtype=np.float64)


def _set_constants(cp: Any, plan: OzakiPlan, W: np.ndarray, Ml: np.ndarray) -> None:
    """Copy the per-modulus constants, the CRT weights' limbs and M's limbs into the module's
    ``__constant__`` arrays (c_mc, c_W, c_Ml)."""
    mod = _module()
    for name, values in (
        ("c_mc", _mod_consts(plan).ravel()),
        ("c_W", W.ravel().astype(np.uint32)),
        ("c_Ml", Ml.astype(np.uint32)),
    ):
        host = np.ascontiguousarray(values)
        # a host-to-device cudaMemcpy (never a kernel write: constant memory is read-only there)
        mod.get_global(name).copy_from_host(host.ctypes.data, host.nbytes)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def ozaki2_cuda(
    A: Any,
    B: Any,
    *,
    target: str = "fp64",
    terms: int | str = "auto",
    workspace_factor: float = 1.5,
    timed: bool = False,
) -> tuple[Any, CudaRun]:
    """Scheme II on the GPU for device or host float64/float32 arrays; returns (D as a CuPy
    array of ``target``'s dtype, :class:`CudaRun`). ``timed`` records CUDA events per phase
    (adds synchronisation-free event records only)."""
    from precision.gpu import require_gpu
    from precision.vendor.cublas import int8_gemm_strided_batched

    cp = require_gpu("ozaki2 backend='cuda'")
    check_args("ozaki2", "int8", target)
    A = cp.ascontiguousarray(cp.asarray(A, dtype=cp.float64))
    B = cp.ascontiguousarray(cp.asarray(B, dtype=cp.float64))
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"A (M x K) and B (K x N) must agree: got {A.shape} and {B.shape}")
    M, K = A.shape
    N = B.shape[1]
    if K > INT8_KMAX:
        raise ValueError(
            f"ozaki2 backend='cuda': K = {K} > {INT8_KMAX}, the largest K whose int8 residue "
            "products are exact in int32; blocking over K is not implemented on the GPU"
        )
    events: list[tuple[str, Any]] = []

    def mark(name: str) -> None:
        if timed:
            ev = cp.cuda.Event()
            ev.record()
            events.append((name, ev))

    mark("start")
    sa = device_line_stats(cp, A, 1)
    sb = device_line_stats(cp, B, 0)
    if terms == "auto":
        n_terms = auto_terms("ozaki2", target, K, max(sa.spread(), sb.spread()))
    elif isinstance(terms, int | np.integer) and not isinstance(terms, bool):
        n_terms = int(terms)
    else:
        raise ValueError(f"terms must be a positive int or 'auto', got {terms!r}")
    plan = make_plan("ozaki2", "int8", target, n_terms, K)
    L = plan.terms
    s_a = cp.asarray(shifts(sa, plan.qa))
    s_b = cp.asarray(shifts(sb, plan.qb))
    W, _, Ml = crt_constants(plan.moduli)
    nl = W.shape[1]
    if nl not in (2, 3, 4, 5):
        raise ValueError(f"ozaki2 backend='cuda': {nl} limbs are not compiled (2..5)")
    _set_constants(cp, plan, W, Ml)
    kp = _round_up(K, _PAD)
    budget = int(workspace_factor * 8 * (A.size + B.size)) - L * M * kp
    per_col = L * kp + 4 * L * M
    nb = max(_PAD, budget // per_col)
    nb = nb // 256 * 256 if nb >= 256 else nb // _PAD * _PAD  # GEMM-friendly widths
    nb = min(nb, _round_up(N, _PAD))
    mark("stats")
    ares = cp.empty((L, M, kp), dtype=cp.int8)
    rows_grid = min(M, 65535)
    _kernel("oz2_residues_rows")(
        ((kp // 4 + 255) // 256, rows_grid),
        (256,),
        (A, np.int32(M), np.int32(K), np.int32(kp), s_a, np.int32(L), ares),
    )
    mark("split")
    bres = cp.empty((L, nb, kp), dtype=cp.int8)
    C = cp.empty((L, M, nb), dtype=cp.int32)
    p, emin_sub, dtype = TARGETS[plan.target]
    D = cp.empty((M, N), dtype=dtype)
    suffix = "f64" if plan.target == "fp64" else "f32"
    recon = _kernel(f"oz2_reconstruct_nl{nl}_{suffix}")
    for c0 in range(0, N, nb):
        nbc = min(nb, N - c0)
        nbp = _round_up(nbc, _PAD)
        bblk = bres.reshape(-1)[: L * nbp * kp]  # [L][nbp][kp] in the buffer's prefix
        _kernel("oz2_residues_cols")(
            ((nbp + 31) // 32, (kp + 63) // 64),
            (32, 8),
            (
                B, np.int32(K), np.int32(N), np.int32(c0), np.int32(nbc), np.int32(kp),
                np.int32(nbp), s_b, np.int32(L), bblk,
            ),
        )  # fmt: skip
        mark("split")
        cblk = C.reshape(-1)[: L * M * nbp]
        int8_gemm_strided_batched(cp, bblk, ares, cblk, M, nbp, kp, L)
        mark("gemm")
        recon(
            ((nbc + 255) // 256, rows_grid),
            (256,),
            (
                cblk, np.int32(M), np.int32(nbc), np.int32(nbp), np.int32(L), s_a, s_b,
                np.int32(c0), np.int32(N), np.int32(p), np.int32(emin_sub), D,
            ),
        )  # fmt: skip
        mark("reconstruct")
    apply_specials(D, A, B, sa, sb, plan.target, xp=cp)
    mark("specials")
    run = CudaRun(plan=plan, nb=nb, workspace_bytes=int(ares.nbytes + bres.nbytes + C.nbytes))
    if timed:
        events[-1][1].synchronize()
        for (_, e0), (name, e1) in zip(events[:-1], events[1:], strict=True):
            ms = cp.cuda.get_elapsed_time(e0, e1)
            run.phase_ms[name] = run.phase_ms.get(name, 0.0) + ms
    return D, run


def ozaki_gemm_cuda(A: Any, B: Any, *, method: str, fmt: str, target: str, terms: int | str) -> Any:
    """Entry point of ``gemm(..., backend="cuda")`` for the Ozaki methods (a CuPy array)."""
    check_args(method, fmt, target)
    if method != "ozaki2":
        raise NotImplementedError(
            f"method={method!r} has no CUDA backend yet (only 'ozaki2'); use backend='emulator'"
        )
    D, _ = ozaki2_cuda(A, B, target=target, terms=terms)
    return D
