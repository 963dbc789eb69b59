"""Execute a :class:`~precision.gemm.schedule.Schedule` with the bit-exact MMA emulator.

Whole matrices go through :func:`precision.tensorcore.mma`, one call per chain of MMA steps
into one accumulator (a loop over k-blocks and steps, never over elements); fp32 additions
and scalings are numpy float32 operations, which round to nearest even and keep subnormals,
as the kernels' ``__fadd_rn``/``__fmul_rn`` do.
"""

from __future__ import annotations

from typing import Any

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
    engine, numpy in and out; the fp32 additions and scalings stay on the host).

    Consecutive MMA steps into one accumulator (``dst = mma(a, b, dst)``, same ``satfinite``)
    over adjacent K ranges of the same operands are one chain of instructions in increasing
    k, and ``mma`` over the joined range runs exactly that chain (every range is whole
    instructions): such steps are collected (:class:`_Chains`, a view of the operands) until
    a step reads the accumulator or another range follows, then run in one ``mma`` call. A
    plain GEMM is one call, as is Ootomo's A_hi·B_hi chain where no correction step falls
    between its k-blocks: the same bits with fewer calls.
    """
    ops = prepare_operands(A, B, schedule)
    M, N = A.shape[0], B.shape[1]
    K = next(iter(ops.values())).shape[-1]
    acc_dtype = np.int32 if schedule.integer else np.float32
    env: dict[str, np.ndarray] = {n: np.zeros((M, N), acc_dtype) for n in schedule.accumulators}
    mma_fmt = "tf32" if schedule.fmt == "tf32" else None
    chains = _Chains(ops, env, acc_dtype, dict(arch=arch, fmt=mma_fmt, device=device))
    kb = schedule.k_block
    if schedule.method == "satf" and not schedule.integer:
        # The software clamp follows every MMA instruction of the emulated GPU: its k-block
        # is the sm90 instruction's K, which another arch may split (sm75 fp16: k = 8).
        from precision.tensorcore.arch import get_arch

        kb = get_arch(arch).instruction(schedule.fmt, "fp32").shape[2]

    def do_mma(op: Mma, lo: int, hi: int) -> None:
        if op.k_part is not None:  # positions k_part of the k-block starting at lo
            lo, hi = lo + op.k_part[0], lo + op.k_part[1]
        chains.add(op, lo, hi)

    for lo in range(0, K, kb):
        for op in schedule.step:
            _apply(op, env, chains, lambda o, lo=lo: do_mma(o, lo, lo + kb))
    for op in schedule.epilogue:
        _apply(op, env, chains, None)
    chains.flush(schedule.output)
    out = env[schedule.output]
    if out.dtype != np.float32:
        raise TypeError(f"schedule {schedule.kernel} ends with {out.dtype}, not float32")
    return out


class _Chains:
    """MMA steps not yet run, per accumulator: ``dst = mma(a[:, lo:hi], b[lo:hi], c)`` whose
    K range grows while the next step is ``dst = mma(a[:, hi:hi2], b[hi:hi2], dst)`` of the
    same operands and ``satfinite``: one chain of instructions in increasing k, run by one
    ``mma`` call over the joined range when anything else reads or replaces ``dst``."""

    def __init__(
        self,
        ops: dict[str, np.ndarray],
        env: dict[str, np.ndarray],
        acc_dtype: type,
        mma_kw: dict[str, Any],
    ) -> None:
        self.ops, self.env, self.acc_dtype, self.mma_kw = ops, env, acc_dtype, mma_kw
        # dst -> (c, satfinite, [a name, b name, k lo, k hi])
        self.pending: dict[str, tuple[np.ndarray, bool, list[Any]]] = {}
        self.zero: list[np.ndarray] = []  # the "zero" accumulator, made only if a step reads it

    def add(self, op: Mma, lo: int, hi: int) -> None:
        """Queue ``op.dst = mma(ops[op.a][:, lo:hi], ops[op.b][lo:hi], op.c)``."""
        run = self.pending.get(op.dst)
        if run is not None and op.c == op.dst and run[1] == op.satfinite:
            piece = run[2]
            if piece[:2] == [op.a, op.b] and piece[3] == lo:
                piece[3] = hi  # the next K range of the same operands: the chain goes on
                return
        if op.c == "zero":
            if not self.zero:
                m, n = self.ops[op.a].shape[0], self.ops[op.b].shape[1]
                self.zero.append(np.zeros((m, n), self.acc_dtype))
            c = self.zero[0]
        else:
            self.flush(op.c)
            c = self.env[op.c]
        # (a pending chain of dst that the new one replaces was never read: it is dropped)
        self.pending[op.dst] = (c, op.satfinite, [op.a, op.b, lo, hi])

    def flush(self, *names: str) -> None:
        """Run the pending steps of the accumulators ``names`` into ``env``."""
        from precision.tensorcore import mma

        for name in names:
            run = self.pending.pop(name, None)
            if run is None:
                continue
            c, satfinite, (a, b, lo, hi) = run
            a_range, b_range = self.ops[a][:, lo:hi], self.ops[b][lo:hi]
            self.env[name] = np.asarray(mma(a_range, b_range, c, satf=satfinite, **self.mma_kw))


def _apply(op, env: dict[str, np.ndarray], chains: _Chains, do_mma) -> None:
    if isinstance(op, Mma):
        do_mma(op)
        return
    # every other step reads its operands (and Satf / IntToFloat their dst) at once
    chains.flush(*(getattr(op, f) for f in ("x", "y", "dst") if hasattr(op, f)))
    if isinstance(op, Add):
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
