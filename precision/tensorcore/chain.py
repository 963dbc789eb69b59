"""``mma``: emulate a chain of tensor-core MMA instructions, bit for bit.

``mma(a, b, c)`` computes ``d = a·b + c`` the way a chain of ``K / k`` consecutive MMA
instructions of the chosen architecture does (the accumulator passes from one instruction to
the next, in increasing k), for every output element of arbitrarily large and batched operands.
The work is split into cache-sized chunks of output rows (and of columns, for wide rows)
processed by a thread pool; memory stays bounded by the chunk size plus the decoded ``b`` (in
column panels; a stack of tiles is decoded by its chunks, whatever the batch size).
Broadcast batch axes are never materialised: each output batch entry reads its operands' own
batch entries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from precision.formats import Format, cast, get_format
from precision.tensorcore import dmma, fdpa, integer
from precision.tensorcore.arch import ArchModel, Instruction, get_arch
from precision.tensorcore.batch import BatchEntries, flat_batch
from precision.tensorcore.dmma_nan import nan_payloads
from precision.threads import in_threads, thread_count

# Formats a tensor core takes as inputs, and accumulator formats.
_INPUTS = (
    "fp16", "bf16", "tf32", "e4m3", "e5m2", "fp64", "int8", "uint8", "int4", "uint4", "uint1",
)  # fmt: skip
_ACCS = ("fp32", "fp16", "int32", "fp64")
# Integer inputs stored in a container of another format's dtype: int4 in int8, uint4 and
# uint1 in uint8. They are named with fmt= / b_fmt=.
_NARROW = {"int4": "int8", "uint4": "uint8", "uint1": "uint8"}
_FP8 = ("e4m3", "e5m2")
# Elements of one block's product array per work item (about 5 MiB of float64 products and
# int16 anchors per thread): big enough to amortise NumPy's per-call overhead, which was most
# of the cost at 2^17. On 2 cores, 2^19 took a 1024^3 fp16 GEMM from 3.3 s to 1.7 s (two
# threads; 2.9 s to 2.5 s on one) and a stack of 4000 m16n8k16 tiles from 0.10 to 0.04 s;
# 2^20 was no faster. The items split only the output, so the bits do not depend on it.
_TARGET_BLOCK_ELEMENTS = 1 << 19
_MIN_THREADED_MACS = 1 << 22
# Decoded b costs 10 bytes per element. Where it is decoded once for all work items (a
# matrix, a b broadcast over the batch), wider problems are split into column panels of b so
# memory stays bounded (about 0.6 GiB for this many elements) whatever the size of one
# matrix. A stack of tiles (b not broadcast, whole tiles per item), and a b of too many
# entries for panels of 8 columns, are decoded by the work items, each its own tiles, so
# nothing decoded grows with the batch: 100000 / 400000 / 800000 e4m3 tiles of 16 x 32 x 8
# held 271 / 1083 / 2167 MiB beyond the output when decoded whole, 9 / 12 / 15 MiB since
# 2026-11-28 (results/bench/memory_audit_2026-11-28; what grows is the thread pool's
# futures, about 2 KB per work item).
_MAX_DECODED_B_ELEMENTS = 1 << 26
# b is decoded in chunks of this many elements into its 10-byte-per-element arrays: decoding
# it whole held about 32 bytes per element at once (float64 values, frexp's float64 mantissas
# and int32 exponents, the int16 copy), 1.4 GiB at the panel size above.
_DECODE_CHUNK_ELEMENTS = 1 << 18


def mma(
    a: Any,
    b: Any,
    c: Any,
    *,
    arch: str | ArchModel = "sm90",
    fmt: str | Format | None = None,
    b_fmt: str | Format | None = None,
    op: str | None = None,
    shape: tuple[int, int, int] | None = None,
    bitop: str | None = None,
    d_fmt: str | Format | None = None,
    satf: bool = False,
    device: str = "cpu",
) -> Any:
    """Bit-exact ``a·b + c`` as computed by a chain of tensor-core MMA instructions.

    Parameters
    ----------
    a : array ``[..., M, K]``
        float16 (fp16), ml_dtypes.bfloat16 (bf16), ml_dtypes.float8_e4m3fn (e4m3),
        ml_dtypes.float8_e5m2 (e5m2), float64 (f64, DMMA), int8 (s8), uint8 (u8), or float32
        with ``fmt="tf32"`` (the low 13 bits of each fp32 container are ignored, as by the
        hardware); int4/uint4 in int8/uint8 (values
        outside their range are refused); b1 (``fmt="uint1"``) as one bit per uint8 element,
        of which only bit 0 is read (the upper bits are ignored, as by the GPU engine).
        Big-endian arrays are accepted, ndarray subclasses (``np.matrix``) as the plain
        array of their values; Python lists too when ``fmt`` names the format:
        floating-point values are rounded once into it by :func:`precision.formats.cast` (to
        nearest even; e4m3 saturates to ±448; see :func:`precision.formats.round`); integer
        formats take integers in their range only (uint1: 0 and 1), anything else is refused.
        Complex arrays are refused.
    b : array ``[..., K, N]``, same format as ``a`` (fp8 may mix e4m3 and e5m2; each operand
        is decoded in its own format; a list ``b`` is rounded into ``b_fmt`` when given).
    c : array ``[..., M, N]``, the accumulator: float32 (fp32 accumulate), float16
        (f16 accumulate), int32 (integer and b1 inputs) or float64 (f64 inputs); a list is
        read as float32 (int32 for integer and b1 inputs, float64 for f64 inputs). The result
        has ``c``'s dtype (``d_fmt``'s where given). A subnormal fp32 ``c`` anchors at -126.
    arch : GPU generation model, ``"sm90"`` (Hopper, verified bit for bit on an H200) or one of
        the literature models in :data:`precision.tensorcore.ARCHS`.
    fmt : input format (any alias, or a :class:`~precision.formats.Format`); needed only for
        float32 inputs (``"tf32"``) and lists; otherwise it must agree with the dtypes.
    b_fmt : format of ``b`` where it differs from ``fmt`` (mixed fp8, mixed-signedness
        integers, or a list ``b``); defaults to ``fmt``.
    op : instruction family, ``"mma"`` (``mma.sync``, the default; sm70's default is
        ``"wmma"``), ``"wgmma"`` (sm90 ``wgmma.mma_async``: fp8 as one 32-product block,
        F = 13, e8m13 output) or ``"wmma"`` (the WMMA API).
    shape : ``(m, n, k)`` of the instruction where the format has several (e.g. sm90
        ``(16, 8, 8)`` for f16, ``(8, 8, 16)`` for s8); the default instruction when None.
        Only k changes the result: M and N of the operands may be anything.
    bitop : b1 inputs only: ``"xor.popc"`` (the default) or ``"and.popc"``.
    d_fmt : format of the result where it differs from ``c``'s (Volta/Turing ``mma.sync``
        m8n8k4 takes an f16 c with an f32 d): ``c`` is read in its own format,
        d is rounded as ``d_fmt`` (its storage dtype is the result's). One instruction only
        (K equal to its k), CPU only.
    satf : ``True`` or ``False`` (anything else is refused): saturate after every
        instruction. Integer inputs (s8/u8/s4/u4): the hardware's ``.satfinite`` clamp to
        [-2^31, 2^31 - 1] instead of wrapping modulo 2^32 (b1 and f64 refuse ``satf``).
        Floating point: the documented satf semantics (+Inf → +MAX_NORM, −Inf → −MAX_NORM,
        NaN → +0 of the accumulator format), applied after each instruction (sm_90 PTX has no
        FP satfinite; kernels do it in software).
    device : ``"cpu"`` (NumPy) or ``"gpu"`` (CuPy kernels with the same arithmetic).

    Leading (batch) axes broadcast. K must be a positive multiple of the instruction's k; the
    chain runs over consecutive instructions in increasing k. M = 0 or N = 0 (or an empty
    batch) gives an empty result of ``c``'s dtype (``d_fmt``'s where given), for any multiple K
    (0 included).
    """
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")
    if not isinstance(satf, (bool, np.bool_)):
        raise TypeError(f"satf must be True or False, got {satf!r}")
    want = None if fmt is None else _named_format("fmt", fmt)
    want_b = want if b_fmt is None else _named_format("b_fmt", b_fmt)
    if d_fmt is not None:
        _named_format("d_fmt", d_fmt)
    a = _as_array(a, "a", device, want)
    b = _as_array(b, "b", device, want_b)
    model = get_arch(arch)
    a_name, b_name = _input_formats(a, b, want, want_b)
    a_is_int = get_format(a_name).is_integer
    c_default = get_format("int32" if a_is_int else "fp64" if a_name == "fp64" else "fp32")
    c = _as_array(c, "c", device, c_default)
    acc_fmt = _acc_format(c)
    out_fmt = acc_fmt if d_fmt is None else get_format(d_fmt).name
    c_fmt = None if out_fmt == acc_fmt else acc_fmt
    ins = model.instruction(
        a_name, out_fmt, b_fmt=b_name, op=op, shape=shape, bitop=bitop, c_fmt=c_fmt
    )
    batch, (m, k_dim, n) = _check_shapes(a, b, c, ins)
    if c_fmt is not None and (k_dim != ins.k or device != "cpu"):
        wrong = [f"K must equal k = {ins.k} (got {k_dim})"] if k_dim != ins.k else []
        wrong += [f"device must be 'cpu' (got {device!r})"] if device != "cpu" else []
        raise ValueError(
            f"{ins.ptx}: c ({c_fmt}) and d ({out_fmt}) differ, which is one instruction on "
            f"the CPU only: {'; '.join(wrong)}"
        )
    if ins.bitop and satf:
        raise ValueError(f"{ins.ptx}: single-bit mma has no .satfinite")
    if ins.schedule == "fma_chain" and satf:
        raise ValueError(f"{ins.ptx}: satf is not defined for f64 mma")
    if ins.is_integer and not ins.bitop:  # (b1: only bit 0 of each element is read)
        _check_integer_range(a, b, ins)
    if device == "gpu":
        from precision.tensorcore.gpu_engine import unsupported

        reason = unsupported(ins)
        if reason:
            raise ValueError(f"{ins.ptx}: device='gpu' cannot run {reason}; use device='cpu'")
    if m == 0 or n == 0 or 0 in batch:
        if device == "gpu":  # as mma_gpu: the GPU is required; numpy c gives numpy out
            from precision.gpu import require_gpu

            cp = require_gpu("mma(device='gpu')")
            if isinstance(c, cp.ndarray):
                return cp.empty(batch + (m, n), dtype=c.dtype)
            return np.empty(batch + (m, n), dtype=c.dtype)
        return np.empty(batch + (m, n), dtype=get_format(out_fmt).storage)
    if device == "gpu":
        from precision.tensorcore.gpu_engine import mma_gpu

        return mma_gpu(a, b, c, instruction=ins, satf=satf)

    if ins.is_integer:
        return _mma_integer(a, b, c, ins, satf)
    if ins.schedule == "fma_chain":
        return _mma_fp64(a, b, c, ins, satf)
    a3, ia = flat_batch(a, batch)
    b3, ib = flat_batch(b, batch)
    c3, ic = flat_batch(c, batch)
    out = _mma_float(a3, b3, c3, (ia, ib, ic), ins, satf)
    return out.reshape(batch + (m, n))


# ----------------------------------------------------------------------------- validation


def _as_array(x: Any, name: str, device: str, fmt: Format | None) -> Any:
    """``x`` as a native-endian, real, >= 2-D plain array (lists converted with ``fmt``'s
    storage, ndarray subclasses such as ``np.matrix`` viewed as ``np.ndarray``)."""
    on_gpu = hasattr(x, "__cuda_array_interface__")
    if on_gpu and device != "gpu":
        raise TypeError(f"{name} is a GPU array; pass device='gpu' with CuPy arrays")
    if isinstance(x, (list, tuple)):
        if fmt is None:
            raise TypeError(
                f"{name} is a Python {type(x).__name__}; pass fmt= (e.g. fmt='fp16') so its "
                f"values can be converted, or pass a numpy array of the format's dtype"
            )
        if np.iscomplexobj(np.asarray(x)):
            raise TypeError(f"{name} is complex; tensor-core MMA takes real inputs only")
        values = np.asarray(x, dtype=np.float64)
        if fmt.is_integer:
            # integers are taken exactly, as from an array: anything else is refused, never
            # rounded, wrapped or saturated (arrays of int4 / uint4 out of range are refused)
            ok = np.isfinite(values) & (values == np.floor(values))
            ok &= (values >= fmt.min_value) & (values <= fmt.max_normal)
            if not ok.all():
                bad = values[~ok].reshape(-1)[0]
                raise ValueError(
                    f"{name}: list values must be integers in {fmt.name}'s range "
                    f"[{fmt.min_value:g}, {fmt.max_normal:g}], got {bad!r}"
                )
            x = values.astype(fmt.storage)
        else:
            # one correct rounding into fmt by its own rules (formats.cast), not a numpy cast
            # (which rounds bf16 twice through float32 and makes e4m3 overflow NaN)
            x = cast(values, fmt)
    if not (on_gpu or isinstance(x, np.ndarray)):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(x).__name__}")
    if not on_gpu and type(x) is not np.ndarray:
        # a subclass (np.matrix, whose indexing keeps two axes, a masked array) is read as the
        # plain array of its values, as gemm reads it
        x = np.asarray(x)
    if np.dtype(x.dtype).kind == "c":
        raise TypeError(
            f"{name} has complex dtype {x.dtype}; tensor-core MMA takes real inputs only "
            f"(emulate the real and imaginary parts as separate products)"
        )
    if not on_gpu and not x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder("="))
    if x.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions, got shape {x.shape}")
    return x


def _input_formats(a: Any, b: Any, fmt: Format | None, b_fmt: Format | None) -> tuple[str, str]:
    """Canonical format names of ``a`` and ``b`` (``fmt`` / ``b_fmt`` compared as Formats, any
    alias; they also name narrow integers held in a wider dtype: int4 in int8, uint4 and
    uint1 in uint8)."""

    def one(x: Any, name: str, want: Format | None) -> str:
        dtype = np.dtype(x.dtype)
        if dtype == np.float32:
            if want is None or want.name != "tf32":
                raise TypeError(
                    f"{name} is float32: tensor cores take fp32 containers only as tf32; pass "
                    f"fmt='tf32' (or round to float16/bfloat16 first)"
                )
            return "tf32"
        if want is not None and want.name in _NARROW and dtype == want.storage:
            return want.name
        try:
            got = get_format(dtype)
        except ValueError:
            got = None
        if got is None or got.name not in _INPUTS:
            raise TypeError(
                f"{name} has dtype {dtype}; expected float16, bfloat16, float8_e4m3fn, "
                f"float8_e5m2, float64, int8, uint8 (int4/uint4/uint1 with fmt=), or float32 "
                f"with fmt='tf32'"
            )
        if want is not None and want != got:
            raise TypeError(f"fmt={want.name!r} contradicts {name}.dtype {dtype} ({got.name})")
        return got.name

    fa, fb = one(a, "a", fmt), one(b, "b", b_fmt)
    fp8 = fa in _FP8 and fb in _FP8
    ints = get_format(fa).is_integer and get_format(fb).is_integer
    if fa != fb and not (fp8 or ints):
        raise TypeError(f"a is {fa} but b is {fb}; both operands must have the same format")
    return fa, fb


def _acc_format(c: Any) -> str:
    try:
        got = get_format(np.dtype(c.dtype)).name
    except ValueError:
        got = None
    if got not in _ACCS:
        raise TypeError(
            f"c has dtype {c.dtype}; expected float32 (fp32 accumulate), float16 (f16 "
            f"accumulate), int32 (integer and b1 inputs) or float64 (f64 inputs)"
        )
    return str(got)


def _named_format(arg: str, fmt: Any) -> Format:
    """:func:`~precision.formats.get_format` of ``fmt``, its errors naming the argument."""
    try:
        return get_format(fmt)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{arg}={fmt!r}: {e}") from None


def _check_shapes(a, b, c, ins: Instruction) -> tuple[tuple[int, ...], tuple[int, int, int]]:
    m, k_dim = a.shape[-2:]
    if b.shape[-2] != k_dim:
        raise ValueError(f"b has {b.shape[-2]} rows but a has K = {k_dim} columns")
    n = b.shape[-1]
    if c.shape[-2:] != (m, n):
        raise ValueError(f"c has shape {c.shape[-2:]} (last two axes); expected (M, N) = {(m, n)}")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], c.shape[:-2])
    except ValueError:
        raise ValueError(
            f"batch axes do not broadcast: a {a.shape[:-2]}, b {b.shape[:-2]}, c {c.shape[:-2]}"
        ) from None
    empty = m == 0 or n == 0 or 0 in batch  # (an empty result: K = 0 too)
    if k_dim % ins.k or (k_dim == 0 and not empty):
        raise ValueError(
            f"K = {k_dim} is not a positive multiple of the instruction's k = {ins.k} "
            f"({ins.ptx}); pad a and b with zeros along K"
        )
    return batch, (m, k_dim, n)


# ----------------------------------------------------------------------------- integer path


def _mma_integer(a, b, c, ins: Instruction, satf: bool) -> np.ndarray:
    """Integer inputs -> s32: each instruction adds an exact sum of k products (uint1: k bits of
    a_row OP b_col, popcounted) and wraps modulo 2^32, or clamps with ``.satfinite``. The
    exact cores are :mod:`precision.tensorcore.integer` (float64 BLAS, exact below 2^53)."""
    # the operands go in their own (8-bit) dtypes and batch shapes: the cores widen them once,
    # to float64, and broadcast batch axes through np.matmul without materialising them
    if ins.bitop:  # (no .satfinite: refused in mma())
        out = integer.b1_mma_chain(
            a & 1,
            b & 1,
            c,
            k_step=ins.k,
            op=ins.bitop,  # type: ignore[arg-type]
            dtype=np.int32,
        )
    else:  # (operand ranges checked in mma())
        out = integer.int_mma_chain(a, b, c, k_step=ins.k, satfinite=satf, dtype=np.int32)
    return out  # int32, written block by block (bounded int64/float64 temporaries)


def _check_integer_range(a: Any, b: Any, ins: Instruction) -> None:
    """ValueError when an integer operand holds values outside its format (4-bit integers
    travel in 8-bit containers), on either engine (numpy or CuPy arrays)."""
    for fmt, x, name in ((ins.a_fmt, a, "a"), (ins.b_fmt, b, "b")):
        f = get_format(fmt)
        lo, hi = (int(x.min()), int(x.max())) if x.size else (0, 0)
        if lo < f.min_value or hi > f.max_normal:
            raise ValueError(
                f"{name} holds values outside {fmt}'s range [{f.min_value:g}, {f.max_normal:g}]: "
                f"got values in [{lo}, {hi}]"
            )


def _mma_fp64(a, b, c, ins: Instruction, satf: bool) -> np.ndarray:
    """f64 (DMMA): a chain of IEEE binary64 FMAs in increasing k, each rounded to nearest
    (:func:`precision.tensorcore.dmma.fma_chain`), NaN outputs with the hardware's payloads
    (:func:`precision.tensorcore.dmma_nan.nan_payloads`)."""
    d = dmma.fma_chain(a, b, c, order="increasing")
    return nan_payloads(a, b, c, d, overwrite=True)  # (d is the chain's own new array)


# ----------------------------------------------------------------------------- float path


def _decode_inputs(x: np.ndarray, fmt: str, ins: Instruction) -> tuple[np.ndarray, np.ndarray]:
    """Values and leading-bit exponents of operand ``x`` (format ``fmt``) as ``ins`` reads it.

    A subnormal input anchors at its format's emin, except under Hopper's fp8 lowering
    (``schedule="fp8_via_f16"``): the operands are converted to f16 first (exactly), so they
    anchor as f16 values: a subnormal e4m3 (down to 2^-9) is a normal f16 with its own
    exponent, while e5m2 subnormals stay f16 subnormals (emin -14 in both). Recorded on the
    H200: mixed e4m3 x e5m2 outputs whose block maximum has a subnormal e4m3 factor.
    """
    if fmt == "tf32":  # the hardware reads only the top 19 bits of the fp32 container
        x = (np.ascontiguousarray(x).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    emin = get_format("fp16" if ins.schedule == "fp8_via_f16" else fmt).emin
    return fdpa.decode(x, emin)


def _decode_blocked(x: np.ndarray, fmt: str, ins: Instruction) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_decode_inputs` of a whole operand ``[R, K, N]``, written chunk by chunk (at most
    :data:`_DECODE_CHUNK_ELEMENTS` at a time) into its float64 values and int16 exponents, so
    that the decode's temporaries stay at chunk size (elementwise: the same values)."""
    r, k, n = x.shape
    val = np.empty(x.shape, dtype=np.float64)
    exp = np.empty(x.shape, dtype=np.int16)
    x2 = x.reshape(r * k, n)  # a view for a column panel of a C-contiguous b
    v2, e2 = val.reshape(r * k, n), exp.reshape(r * k, n)
    cols = min(n, _DECODE_CHUNK_ELEMENTS)
    rows = max(1, _DECODE_CHUNK_ELEMENTS // cols)
    for r0 in range(0, r * k, rows):
        for c0 in range(0, n, cols):
            part = (slice(r0, r0 + rows), slice(c0, c0 + cols))
            v2[part], e2[part] = _decode_inputs(x2[part], fmt, ins)
    return val, exp


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

    def __init__(self, ins: Instruction, satf: bool):
        self.ins = ins
        self.satf = satf
        # a subnormal c anchors at its own format's emin (fp32: -126); c's format differs from
        # the accumulator's only in the first block of a mixed c/d instruction
        self.emin = {
            np.dtype(get_format(f).storage): get_format(f).emin for f in (ins.acc_fmt, ins.c_format)
        }

    def block(self, a, ea, b, eb, acc, special):
        c64, ec = fdpa.decode(acc, self.emin[acc.dtype])
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


def _work_items(r: int, m: int, n: int, block: int) -> list[tuple[slice, slice, slice]]:
    """Split the [R, M, N] output into items (batch entries, rows, columns) whose block product
    array is about the target size; rows wider than that are split into column ranges."""
    cols = min(n, max(1, _TARGET_BLOCK_ELEMENTS // block))
    rows = max(1, _TARGET_BLOCK_ELEMENTS // max(1, cols * block))
    every = slice(0, n)
    if rows >= m and cols == n:
        reps = max(1, rows // m)
        return [(slice(r0, min(r, r0 + reps)), slice(0, m), every) for r0 in range(0, r, reps)]
    return [
        (slice(ri, ri + 1), slice(m0, min(m, m0 + rows)), slice(n0, min(n, n0 + cols)))
        for ri in range(r)
        for m0 in range(0, m, rows)
        for n0 in range(0, n, cols)
    ]


def _select(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``x[idx]`` along axis 0, as a view when ``idx`` is one repeated entry or a run."""
    i0 = int(idx[0])
    if (idx == i0).all():
        return x[i0 : i0 + 1]
    if (np.diff(idx) == 1).all():
        return x[i0 : i0 + len(idx)]
    return x[idx]


def _mma_float(
    a3: np.ndarray,
    b3: np.ndarray,
    c3: np.ndarray,
    index: tuple[BatchEntries, BatchEntries, BatchEntries],
    ins: Instruction,
    satf: bool,
) -> np.ndarray:
    """Float chain over R output batch entries; entry r reads ``a3[ia[r]]``, ``b3[ib[r]]``,
    ``c3[ic[r]]`` (``index = (ia, ib, ic)``, read a range of entries at a time)."""
    ia, ib, ic = index
    r = len(ia)
    m, k_dim = a3.shape[1:]
    n = b3.shape[-1]
    out = np.empty((r, m, n), dtype=get_format(ins.acc_fmt).storage)
    items = _work_items(r, m, n, ins.block)
    # b is decoded by the items, each its own entries along with its a, in the same panels
    # along K, for a stack of tiles (b not broadcast, whole output entries per item: every
    # tile of b is read by one item alone) and wherever decoding b for all items would hold
    # more than _MAX_DECODED_B_ELEMENTS even in panels of 8 columns (many b entries, each
    # then decoded by every item that reads it). Otherwise it is decoded once for all items,
    # in column panels.
    whole = items[0][1] == slice(0, m) and items[0][2] == slice(0, n)  # (then every item is)
    rb = b3.shape[0]
    b_by_item = (whole and rb == r) or rb * k_dim * min(n, 8) > _MAX_DECODED_B_ELEMENTS
    b_val = b_exp = np.empty((0, 0, 0))
    b_special = False
    if not b_by_item:
        panel = max(8, _MAX_DECODED_B_ELEMENTS // max(1, rb * k_dim))
        if n > panel:  # output columns are independent: one panel of b decoded at a time
            for n0 in range(0, n, panel):
                cols = slice(n0, min(n, n0 + panel))
                out[..., cols] = _mma_float(a3, b3[..., cols], c3[..., cols], index, ins, satf)
            return out
        b_val, b_exp = _decode_blocked(b3, ins.b_fmt, ins)
        b_special = not np.isfinite(b_val).all()
    chain = _FloatChain(ins, satf)

    def work(item: tuple[slice, slice, slice]) -> None:
        rs, ms, ns = item
        nrep = rs.stop - rs.start
        # a and c are taken per output entry of this item (a bounded chunk); b stays one
        # entry when it is broadcast (fdpa.block broadcasts it).
        a_item = _select(a3, ia[rs])[:, ms]
        if a_item.shape[0] != nrep:
            a_item = np.broadcast_to(a_item, (nrep,) + a_item.shape[1:])
        if not b_by_item:
            bv, be = _select(b_val, ib[rs])[..., ns], _select(b_exp, ib[rs])[..., ns]
        c_item = _select(c3, ic[rs])[:, ms, ns]
        acc = np.array(np.broadcast_to(c_item, (nrep,) + c_item.shape[1:]), dtype=c3.dtype)
        # a (and b where the item decodes it) in panels of whole instructions along K (the
        # chain goes on from one to the next), about _DECODE_CHUNK_ELEMENTS at a time: an
        # item's rows times all of K (all of a, for a thin b) held 32 bytes per element at once
        lines = nrep * (a_item.shape[1] + (ns.stop - ns.start if b_by_item else 0))
        kp = max(1, _DECODE_CHUNK_ELEMENTS // max(1, lines) // ins.k) * ins.k
        for k0 in range(0, k_dim, kp):
            ks = slice(k0, k0 + kp)
            a_val, a_exp = _decode_inputs(a_item[..., ks], ins.a_fmt, ins)
            if b_by_item:
                b_k = _decode_inputs(_select(b3[:, ks, ns], ib[rs]), ins.b_fmt, ins)
                special = not (np.isfinite(b_k[0]).all() and np.isfinite(a_val).all())
            else:
                b_k = bv[:, ks], be[:, ks]
                special = b_special or not np.isfinite(a_val).all()
            acc = chain.run(a_val, a_exp, b_k[0], b_k[1], acc, special)
        out[rs, ms, ns] = acc

    threads = min(len(items), thread_count())  # (OMP_NUM_THREADS: a Dask worker's share)
    if threads > 1 and r * m * n * k_dim >= _MIN_THREADED_MACS:
        in_threads(work, items, threads)
    else:
        for item in items:
            work(item)
    return out
