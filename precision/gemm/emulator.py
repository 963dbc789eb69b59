"""Execute a :class:`~precision.gemm.schedule.Schedule` with the bit-exact MMA emulator.

Whole matrices go through :func:`precision.tensorcore.mma` per k-block (a loop over k-blocks,
never over elements); fp32 additions and scalings are numpy float32 operations, which round to
nearest even and keep subnormals, as the kernels' ``__fadd_rn``/``__fmul_rn`` do.
"""

from __future__ import annotations

import numpy as np

from precision.gemm.operands import prepare_operands
from precision.gemm.schedule import Add, IntToFloat, Mma, Satf, Scale, Schedule
from precision.tensorcore.fdpa import canonicalize_nan

_FLT_MAX = np.float32(np.finfo(np.float32).max)


def satf(x: np.ndarray) -> np.ndarray:
    """Floating-point satf: +Inf -> +FLT_MAX, -Inf -> -FLT_MAX, NaN -> +0 (float32)."""
    return np.where(np.isnan(x), np.float32(0.0), np.clip(x, -_FLT_MAX, _FLT_MAX)).astype(
        np.float32
    )


def run_schedule(
    A: np.ndarray, B: np.ndarray, schedule: Schedule, *, arch: str = "sm90", device: str = "cpu"
) -> np.ndarray:
    """The kernel's fp32 output for fp32 inputs ``A`` (M x K) and ``B`` (K x N), bit for bit.
    ``device``: the engine of the MMA steps (``"gpu"``: :func:`precision.tensorcore.mma`'s GPU
    engine, numpy in and out; the fp32 additions and scalings stay on the host)."""
    from precision.tensorcore import mma

    ops = prepare_operands(A, B, schedule)
    M, N = A.shape[0], B.shape[1]
    K = next(iter(ops.values())).shape[-1]
    acc_dtype = np.int32 if schedule.integer else np.float32
    env: dict[str, np.ndarray] = {n: np.zeros((M, N), acc_dtype) for n in schedule.accumulators}
    zero: list[np.ndarray] = []  # the "zero" accumulator, made only if a step reads it
    mma_fmt = "tf32" if schedule.fmt == "tf32" else None
    kb = schedule.k_block

    def do_mma(op: Mma, lo: int, hi: int) -> None:
        if op.k_part is not None:  # positions k_part of the k-block starting at lo
            lo, hi = lo + op.k_part[0], lo + op.k_part[1]
        a = ops[op.a][:, lo:hi]
        b = ops[op.b][lo:hi]
        if op.c == "zero" and not zero:
            zero.append(np.zeros((M, N), acc_dtype))
        c = zero[0] if op.c == "zero" else env[op.c]
        env[op.dst] = np.asarray(
            mma(a, b, c, arch=arch, fmt=mma_fmt, satf=op.satfinite, device=device)
        )

    step = schedule.step
    if (
        len(step) == 1
        and isinstance(step[0], Mma)
        and step[0].c == step[0].dst
        and not step[0].satfinite
    ):
        do_mma(step[0], 0, K)  # a plain chain: one call covers every k-block in order
    else:
        for lo in range(0, K, kb):
            for op in step:
                _apply(op, env, lambda o, lo=lo: do_mma(o, lo, lo + kb))
    for op in schedule.epilogue:
        _apply(op, env, None)
    out = env[schedule.output]
    if out.dtype != np.float32:
        raise TypeError(f"schedule {schedule.kernel} ends with {out.dtype}, not float32")
    return out


def _apply(op, env: dict[str, np.ndarray], do_mma) -> None:
    if isinstance(op, Mma):
        do_mma(op)
    elif isinstance(op, Add):
        with np.errstate(invalid="ignore", over="ignore"):
            env[op.dst] = canonicalize_nan((env[op.x] + env[op.y]).astype(np.float32))
    elif isinstance(op, Scale):
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):
            scaled = env[op.x] * np.float32(2.0**op.log2)
            env[op.dst] = canonicalize_nan(scaled.astype(np.float32))
    elif isinstance(op, Satf):
        env[op.dst] = satf(env[op.dst])
    elif isinstance(op, IntToFloat):
        env[op.dst] = env[op.dst].astype(np.float32)
    else:  # pragma: no cover - schedule construction prevents this
        raise TypeError(f"unknown schedule op {op!r}")
