"""``mma``: emulate a chain of tensor-core MMA instructions, bit for bit.

``mma(a, b, c)`` computes ``d = a·b + c`` the way a chain of ``K / k`` consecutive MMA
instructions of the chosen architecture does (the accumulator passes from one instruction to
the next, in increasing k), for every output element of arbitrarily large and batched operands.
The work is split into cache-sized chunks of output rows processed by a thread pool; memory
stays bounded by the chunk size plus the decoded ``b``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np

from precision.tensorcore import fdpa
from precision.tensorcore.arch import ACC_EMIN, INPUT_EMIN, Instruction, get_arch

# numpy dtype -> input format name (float32 is tf32 only when asked for).
_INPUT_DTYPES: dict[np.dtype, str] = {
    np.dtype(np.float16): "fp16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(ml_dtypes.float8_e4m3fn): "e4m3",
    np.dtype(ml_dtypes.float8_e5m2): "e5m2",
    np.dtype(np.int8): "int8",
}
_ACC_DTYPES: dict[np.dtype, str] = {
    np.dtype(np.float32): "fp32",
    np.dtype(np.float16): "fp16",
    np.dtype(np.int32): "int32",
}
_FP8 = ("e4m3", "e5m2")
# Elements of one block's product array per work item: big enough to amortise NumPy's per-call
# overhead, small enough to stay in cache.
_TARGET_BLOCK_ELEMENTS = 1 << 17
_MIN_THREADED_MACS = 1 << 22
# Decoded b costs 10 bytes per element; wider problems are split into column panels of b so
# memory stays bounded (about 0.6 GiB for this many elements) whatever the size.
_MAX_DECODED_B_ELEMENTS = 1 << 26


def mma(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    *,
    arch: str = "sm90",
    fmt: str | None = None,
    satf: bool = False,
    device: str = "cpu",
) -> np.ndarray:
    """Bit-exact ``a·b + c`` as computed by a chain of tensor-core MMA instructions.

    Parameters
    ----------
    a : ndarray ``[..., M, K]``
        float16 (f16), ml_dtypes.bfloat16 (bf16), ml_dtypes.float8_e4m3fn (e4m3),
        ml_dtypes.float8_e5m2 (e5m2), int8, or float32 with ``fmt="tf32"`` (the low 13 bits of
        each fp32 container are ignored, as by the hardware).
    b : ndarray ``[..., K, N]``, same format as ``a`` (fp8 may mix e4m3 and e5m2).
    c : ndarray ``[..., M, N]``, the accumulator: float32 (fp32 accumulate), float16
        (f16 accumulate) or int32 (int8 inputs). The result has ``c``'s dtype.
    arch : GPU generation model, ``"sm90"`` (Hopper, verified bit for bit on an H200) or one of
        the literature models in :data:`precision.tensorcore.ARCHS`.
    fmt : input format name; needed only for float32 inputs (``"tf32"``).
    satf : saturate after every instruction. int8: the hardware's ``.satfinite`` clamp to
        [-2^31, 2^31 - 1] instead of wrapping modulo 2^32. Floating point: the documented satf
        semantics (+Inf → +MAX_NORM, −Inf → −MAX_NORM, NaN → +0 of the accumulator format),
        applied after each instruction (sm_90 PTX has no FP satfinite; kernels do it in software).
    device : ``"cpu"`` (NumPy) or ``"gpu"`` (CuPy kernels with the same arithmetic).

    Leading (batch) axes broadcast. K must be a multiple of the instruction's k; the chain runs
    over consecutive instructions in increasing k.
    """
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")
    a, b, c = (_as_array(x, name, device) for x, name in ((a, "a"), (b, "b"), (c, "c")))
    model = get_arch(arch)
    in_fmt = _input_format(a, b, fmt)
    acc_fmt = _ACC_DTYPES.get(c.dtype)
    if acc_fmt is None:
        raise TypeError(
            f"c has dtype {c.dtype}; expected float32 (fp32 accumulate), float16 (f16 "
            f"accumulate) or int32 (int8 inputs)"
        )
    ins = model.instruction(in_fmt, acc_fmt)
    batch, (m, k_dim, n) = _check_shapes(a, b, c, ins)
    if device == "gpu":
        from precision.tensorcore.gpu_engine import mma_gpu

        return mma_gpu(a, b, c, instruction=ins, satf=satf)

    a3 = np.broadcast_to(a, batch + (m, k_dim)).reshape(-1, m, k_dim)
    b3 = np.broadcast_to(b, batch + (k_dim, n)).reshape(-1, k_dim, n)
    c3 = np.broadcast_to(c, batch + (m, n)).reshape(-1, m, n)
    if in_fmt == "int8":
        out = _mma_int8(a3, b3, c3, ins, satf)
    else:
        out = _mma_float(a3, b3, c3, ins, satf, in_fmt)
    return out.reshape(batch + (m, n))


# ----------------------------------------------------------------------------- validation


def _as_array(x: object, name: str, device: str) -> np.ndarray:
    on_gpu = hasattr(x, "__cuda_array_interface__")
    if on_gpu and device != "gpu":
        raise TypeError(f"{name} is a GPU array; pass device='gpu' with CuPy arrays")
    if not (on_gpu or isinstance(x, np.ndarray)):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions, got shape {x.shape}")
    return x


def _input_format(a: np.ndarray, b: np.ndarray, fmt: str | None) -> str:
    def one(x: np.ndarray, name: str) -> str:
        if x.dtype == np.float32:
            if fmt != "tf32":
                raise TypeError(
                    f"{name} is float32: tensor cores take fp32 containers only as tf32; pass "
                    f"fmt='tf32' (or round to float16/bfloat16 first)"
                )
            return "tf32"
        got = _INPUT_DTYPES.get(x.dtype)
        if got is None:
            raise TypeError(
                f"{name} has dtype {x.dtype}; expected float16, bfloat16, float8_e4m3fn, "
                f"float8_e5m2, int8, or float32 with fmt='tf32'"
            )
        if fmt is not None and fmt != got:
            raise TypeError(f"fmt={fmt!r} contradicts {name}.dtype {x.dtype} ({got})")
        return got

    fa, fb = one(a, "a"), one(b, "b")
    if fa != fb and not (fa in _FP8 and fb in _FP8):
        raise TypeError(f"a is {fa} but b is {fb}; both operands must have the same format")
    return fa


def _check_shapes(a, b, c, ins: Instruction) -> tuple[tuple[int, ...], tuple[int, int, int]]:
    m, k_dim = a.shape[-2:]
    if b.shape[-2] != k_dim:
        raise ValueError(f"b has {b.shape[-2]} rows but a has K = {k_dim} columns")
    n = b.shape[-1]
    if c.shape[-2:] != (m, n):
        raise ValueError(f"c has shape {c.shape[-2:]} (last two axes); expected (M, N) = {(m, n)}")
    if k_dim == 0 or k_dim % ins.k:
        raise ValueError(
            f"K = {k_dim} is not a positive multiple of the instruction's k = {ins.k} "
            f"({ins.ptx}); pad a and b with zeros along K"
        )
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], c.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch axes do not broadcast: a {a.shape[:-2]}, b {b.shape[:-2]}, c {c.shape[:-2]}"
        ) from None
    return batch, (m, k_dim, n)


# ----------------------------------------------------------------------------- integer path


def _mma_int8(a3, b3, c3, ins: Instruction, satf: bool) -> np.ndarray:
    """int8 → s32: each instruction adds an exact sum of k products; wrap or satfinite."""
    af, bf = a3.astype(np.float64), b3.astype(np.float64)
    acc = c3.astype(np.int64)
    lo, hi = -(2**31), 2**31 - 1
    if not satf:
        # Partial sums are below 2^53, so float64 BLAS products are exact; wrapping modulo 2^32
        # commutes with the chain.
        acc += np.matmul(af, bf).astype(np.int64)
        return ((acc - lo) % 2**32 + lo).astype(np.int32)
    for k0 in range(0, af.shape[-1], ins.k):
        acc += np.matmul(af[..., k0 : k0 + ins.k], bf[..., k0 : k0 + ins.k, :]).astype(np.int64)
        np.clip(acc, lo, hi, out=acc)
    return acc.astype(np.int32)


# ----------------------------------------------------------------------------- float path


def _decode_inputs(x: np.ndarray, in_fmt: str) -> tuple[np.ndarray, np.ndarray]:
    if in_fmt == "tf32":  # the hardware reads only the top 19 bits of the fp32 container
        x = (np.ascontiguousarray(x).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return fdpa.decode(x, INPUT_EMIN[in_fmt])


def _fp8_order(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Hopper's fp8 lowering: k mod 4 in {0, 1} form the first f16 block, {2, 3} the second."""
    idx = np.arange(k)
    return idx[idx % 4 < 2], idx[idx % 4 >= 2]


def _saturate(acc: np.ndarray) -> None:
    """FP satf in place: +Inf → +MAX_NORM, −Inf → −MAX_NORM, NaN → +0."""
    big = np.finfo(acc.dtype).max
    np.nan_to_num(acc, copy=False, nan=0.0, posinf=big, neginf=-big)


def _rn_add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x + y rounded to nearest even in x's dtype (an FADD.RN/HADD.RN), canonical NaN out."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = (x.astype(np.float64) + y.astype(np.float64)).astype(x.dtype)
    return fdpa.canonicalize_nan(s)


class _FloatChain:
    """Runs one instruction chain over a work item (a stack of output row blocks)."""

    def __init__(self, ins: Instruction, satf: bool, in_fmt: str):
        self.ins = ins
        self.satf = satf
        self.in_fmt = in_fmt
        self.acc_emin = ACC_EMIN[ins.acc_fmt]

    def block(self, a, ea, b, eb, acc, special):
        c64, ec = fdpa.decode(acc, self.acc_emin)
        special = special or not np.isfinite(acc).all()
        return fdpa.block(
            a,
            ea,
            b,
            eb,
            c64,
            ec,
            frac_bits=self.ins.frac_bits,
            e_zero=self.ins.e_zero,
            rounding=self.ins.out_rounding,
            check_special=special,
        )

    def run(self, a, ea, b, eb, acc, special: bool) -> np.ndarray:
        ins, k_dim = self.ins, a.shape[-1]
        if ins.schedule == "fp8_via_f16":
            g1, g2 = _fp8_order(ins.k)
            for k0 in range(0, k_dim, ins.k):
                s = np.zeros_like(acc)
                for g in (g1 + k0, g2 + k0):
                    s = self.block(a[..., g], ea[..., g], b[:, g, :], eb[:, g, :], s, special)
                acc = _rn_add(acc, s)
                if self.satf:
                    _saturate(acc)
            return acc
        per_ins = ins.k // ins.block
        for i, k0 in enumerate(range(0, k_dim, ins.block)):
            ks = slice(k0, k0 + ins.block)
            acc = self.block(a[..., ks], ea[..., ks], b[:, ks, :], eb[:, ks, :], acc, special)
            if self.satf and (i + 1) % per_ins == 0:
                _saturate(acc)
        return acc


def _work_items(r: int, m: int, n: int, block: int) -> list[tuple[slice, slice]]:
    """Split [R, M] output rows into items whose block product array is about the target size."""
    per_row = max(1, n * block)
    rows = max(1, _TARGET_BLOCK_ELEMENTS // per_row)
    if rows >= m:
        reps = max(1, rows // m)
        return [(slice(r0, min(r, r0 + reps)), slice(0, m)) for r0 in range(0, r, reps)]
    return [
        (slice(ri, ri + 1), slice(m0, min(m, m0 + rows)))
        for ri in range(r)
        for m0 in range(0, m, rows)
    ]


def _mma_float(a3, b3, c3, ins: Instruction, satf: bool, in_fmt: str) -> np.ndarray:
    r, m, k_dim = a3.shape
    n = b3.shape[-1]
    out = np.empty((r, m, n), dtype=c3.dtype)
    panel = max(8, _MAX_DECODED_B_ELEMENTS // max(1, b3.shape[0] * k_dim))
    if n > panel:  # output columns are independent: one panel of b decoded at a time
        for n0 in range(0, n, panel):
            cols = slice(n0, min(n, n0 + panel))
            out[..., cols] = _mma_float(a3, b3[..., cols], c3[..., cols], ins, satf, in_fmt)
        return out
    chain = _FloatChain(ins, satf, in_fmt)
    b_val, b_exp = _decode_inputs(b3, in_fmt)
    b_special = not np.isfinite(b_val).all()
    rb = b3.shape[0]

    def work(item: tuple[slice, slice]) -> None:
        rs, ms = item
        a_val, a_exp = _decode_inputs(a3[rs, ms], in_fmt)
        bs = rs if rb > 1 else slice(0, 1)
        bv, be = b_val[bs], b_exp[bs]
        special = b_special or not np.isfinite(a_val).all()
        acc = np.array(c3[rs, ms], dtype=c3.dtype)
        out[rs, ms] = chain.run(a_val, a_exp, bv, be, acc, special)

    items = _work_items(r, m, n, ins.block)
    threads = min(len(items), os.cpu_count() or 1)
    if threads > 1 and r * m * n * k_dim >= _MIN_THREADED_MACS:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(work, items))
    else:
        for item in items:
            work(item)
    return out
