"""Exact matrix products, rounded once: the reference every error metric is measured against.

:func:`exact_matmul` returns ``RN(A·B + C)``: the exact real value of every output element,
rounded once to nearest-even in float64 or in fp32. How (Ozaki-style error-free splitting):

1. **Exact digits.** Every input is a float64 (fp16/bf16/fp8/tf32/fp32/fp64 values are; integers
   up to 2**53 too). Row ``i`` of ``A`` is scaled by its own power of two ``2**ea_i`` (``|A[i,:]|
   < 2**ea_i``), column ``j`` of ``B`` by ``2**eb_j``, and each element is cut, by integer bit
   operations on its 53-bit significand, into signed base-``2**β`` digits:
   ``A[i,k] = Σ_s DA_s[i,k]·2**(ea_i − β(s+1))`` with ``|DA_s| < 2**β``. As many digits are
   taken as the lowest set bit of any element needs, so nothing is dropped.
2. **Exact BLAS products.** ``β = ⌊(53 − ⌈log2 K⌉)/2⌋`` makes every partial sum of
   ``DA_s @ DB_t`` an integer below ``K·2**(2β) ≤ 2**53`` in magnitude, so a float64 GEMM (NumPy's
   BLAS or cuBLAS DGEMM, in any summation order, with or without FMA) computes it exactly.
3. **Exact accumulation.** Products with the same ``g = s + t`` share the scale
   ``2**(ea_i + eb_j − β(g+2))`` and are summed in int64. ``C`` is cut into digits on the same
   per-element grid; where it lies 63 or more bits above every product bit, or below the
   lowest, it is moved to that distance (only its own top bits, or only its sign, can then
   act; the exponent is put back), so the limbs stay few whatever C's range. Carry
   propagation turns the digits into a sign and a magnitude in base ``2**β`` limbs: the exact
   value, still unrounded.
4. **One rounding.** The top 61–63 bits of the magnitude plus a sticky bit (any lower bit set)
   determine round-to-nearest-even at precision 53 (fp64) or 24 (fp32), with gradual underflow
   (the rounding position moves up for subnormal results) and overflow to ±Inf. This is the
   correctly rounded result: there is no intermediate rounding anywhere before it.

Memory: the work is done in tiles of rows, columns and k, sized from the digit counts so
that the working arrays stay within ``_MEMORY_BUDGET`` (256 MiB; measured peak beyond the
inputs, their float64 copies and the output below 3x that, so under 1 GB at any size), or
``_GPU_MEMORY_BUDGET`` (2 GiB) of device memory with ``device="gpu"``: each tile costs a few
dozen kernel launches, so the GPU takes larger tiles (n = 4096, fp32 data: 18 tile steps
instead of 243).

Cost: ``Sa·Sb`` float64 GEMMs, where ``Sa``, ``Sb`` are the digit counts (2–3 each for fp32
data of moderate dynamic range per row; more for rows spanning many binades). Exact zeros give
+0. Non-finite inputs are rejected.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from precision.formats import get_format, inexact_in_float64, refuse_masked

#: Formats the result can be rounded to (parameters p, emin, emax come from the registry).
_ROUNDINGS: tuple[str, ...] = ("fp64", "fp32")
#: Bytes of working arrays planned per tile (limbs, digit matrices and their temporaries).
#: The measured peak beyond inputs and output stays below 3x this (tests/formats), so under
#: 1 GB at any size: larger products take more tiles, not more memory.
_MEMORY_BUDGET = 256 << 20
#: The same for ``device="gpu"``, in device memory (peak below 3x this, about 6 GB).
_GPU_MEMORY_BUDGET = 2 << 30


def exact_matmul(
    A: Any, B: Any, C: Any = None, *, rounding: str = "fp64", device: str = "cpu"
) -> Any:
    """``A @ B (+ C)`` computed exactly and rounded once to nearest-even.

    Parameters
    ----------
    A, B : 2-D arrays ``M×K`` and ``K×N`` of finite values exactly representable in float64
        (any float dtype up to float64 including ml_dtypes formats, or integers whose float64
        conversion is exact: all up to 2**53 in magnitude; others raise ``ValueError``).
        NumPy arrays, or CuPy arrays with ``device="gpu"``.
    C : optional ``M×N`` (or broadcastable) addend, same rules.
    rounding : ``"fp64"`` — the result is the float64 nearest the exact value;
        ``"fp32"`` — the fp32 nearest the exact value (one rounding, subnormals and overflow to
        ±Inf as IEEE round-to-nearest-even), returned as float32.
    device : ``"cpu"`` (NumPy/BLAS) or ``"gpu"`` (CuPy/cuBLAS DGEMM); the result is a NumPy array
        for ``"cpu"`` and a CuPy array for ``"gpu"``. Both give identical bits.

    See the module docstring for why the result is correctly rounded.
    """
    try:
        out_fmt = get_format(rounding)
    except ValueError:
        out_fmt = None
    if out_fmt is None or out_fmt.name not in _ROUNDINGS:
        raise ValueError(f"rounding must be 'fp64' or 'fp32' (or an alias), got {rounding!r}")
    if device == "cpu":
        xp: ModuleType = np
    elif device == "gpu":
        from precision.gpu import require_gpu

        xp = require_gpu("exact_matmul(device='gpu')")
    else:
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")
    a = _as_float64(xp, A, "A")
    b = _as_float64(xp, B, "B")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"A and B must be 2-D, got shapes {a.shape} and {b.shape}")
    m, k = a.shape
    if b.shape[0] != k:
        raise ValueError(f"A is {m}×{k} but B has {b.shape[0]} rows; expected {k}")
    n = b.shape[1]
    c = None
    if C is not None:
        c = _as_float64(xp, C, "C")
        try:
            c = xp.broadcast_to(c, (m, n))  # a view: tiles read their part
        except ValueError:
            raise ValueError(
                f"C has shape {c.shape}; expected one broadcastable to {(m, n)}"
            ) from None
    p, emin, emax = out_fmt.precision, out_fmt.emin, out_fmt.emax
    out = xp.empty((m, n), dtype=np.float64)
    if m and n:
        beta = max(1, (53 - max(k - 1, 0).bit_length()) // 2)
        budget = _MEMORY_BUDGET if xp is np else _GPU_MEMORY_BUDGET
        ea, na = _row_digits(xp, a, beta, budget)  # per row of A: scale exponent, digit count
        eb, nb = _row_digits(xp, b.T, beta, budget)  # per column of B
        cd = 0 if c is None else -(-(53 + beta - 1) // beta) + 1  # limbs C can add
        r, cols, kc = _tile_shape(m, n, k, int(na.max()), int(nb.max()), cd, budget)
        for r0 in range(0, m, r):
            rs = slice(r0, min(m, r0 + r))
            sa = int(na[rs].max())
            for c0 in range(0, n, cols):
                cs = slice(c0, min(n, c0 + cols))
                sb = int(nb[cs].max())
                g_max = sa + sb - 2
                limbs: dict[int, Any] = {}
                for k0 in range(0, k, kc):
                    ks = slice(k0, min(k, k0 + kc))
                    da = _digits(xp, a[rs, ks], ea[rs, None], beta, sa)
                    db = [d.T for d in _digits(xp, b.T[cs, ks], eb[cs, None], beta, sb)]
                    _add_products(xp, limbs, da, db, g_max)
                    del da, db
                base = ea[rs, None] + eb[None, cs]  # value = Σ_g S_g·2^(base − β(g+2))
                out[rs, cs] = _finish(
                    xp, limbs, None if c is None else c[rs, cs], base, beta, g_max, p, emin, emax
                )
    return out.astype(np.float32) if out_fmt.name == "fp32" else out


def _tile_shape(
    m: int, n: int, k: int, sa: int, sb: int, cd: int, budget: int | None = None
) -> tuple[int, int, int]:
    """Rows, columns and k-extent of the tiles, so that one tile's arrays stay within
    ``budget`` bytes (default :data:`_MEMORY_BUDGET`): the limbs (planned at 6 int64 arrays
    per limb and output element, with ``cd`` limbs for C; one stack of limbs, C's band of at
    most ``2·(⌈63/β⌉ + cd) + ⌈64/β⌉`` limbs, see :func:`_c_digits`, and the rounding's
    temporaries fit in that, as tests/formats measures) and the digits of both
    operand blocks (``sa`` / ``sb`` float64 digit arrays plus about 8 temporaries per
    element)."""
    budget = _MEMORY_BUDGET if budget is None else budget
    limbs = sa + sb - 1 + cd + 4
    elements = max(1, budget // 2 // (6 * 8 * limbs))
    r = min(m, max(1, math.isqrt(elements)))
    c = min(n, max(1, elements // r))
    if c == n:
        r = min(m, max(1, elements // n))
    kc = max(1, min(k, budget // 2 // (8 * ((sa + 8) * r + (sb + 8) * c))))
    return r, c, kc


# --------------------------------------------------------------------------------- digits


def _as_float64(xp: ModuleType, x: Any, name: str) -> Any:
    """``x`` as a float64 array on ``xp``'s device; errors name ``name`` and what is wrong."""
    refuse_masked(x, name, "exact_matmul")
    on_gpu = xp is not np and isinstance(x, xp.ndarray)
    if xp is np and hasattr(x, "__cuda_array_interface__"):
        raise TypeError(f"{name} is a GPU array; pass device='gpu'")
    arr = x if on_gpu else np.asarray(x)
    kind = arr.dtype.kind
    if kind not in "fiubV" or (kind == "f" and arr.dtype.itemsize > 8):
        raise TypeError(
            f"{name} has dtype {arr.dtype}; expected a real float (≤ 64 bits) or integer dtype"
        )
    out = arr.astype(np.float64) if on_gpu else xp.asarray(arr.astype(np.float64))
    if kind in "iu" and arr.size and arr.dtype.itemsize >= 8:
        src = arr if xp is np else xp.asarray(arr)
        inexact = inexact_in_float64(src, out, xp)
        if bool(inexact.any()):
            bad = src[inexact][0]
            raise ValueError(
                f"{name} holds the integer {int(bad)}, which float64 cannot represent exactly "
                "(integers are exact up to 2**53 in magnitude, and above only when their "
                "low bits are zero); the result would not be exact, so it is refused"
            )
    if not bool(xp.isfinite(out).all()):
        raise ValueError(f"{name} contains Inf or NaN; the exact reference needs finite inputs")
    return out


def _significands(xp: ModuleType, x: Any) -> tuple[Any, Any]:
    """``|x| = mag·2**lsb`` with ``mag`` a uint64 below 2**53 (0 for zeros) and int64 ``lsb``."""
    mant, e = xp.frexp(x)
    mag = xp.abs(xp.ldexp(mant, 53)).astype(np.uint64)
    return mag, e.astype(np.int64) - 53


def _shift_digit(xp: ModuleType, mag: Any, sh: Any, mask: np.uint64) -> Any:
    """``⌊mag·2**(−sh)⌋ mod 2**β`` for int64 shifts of either sign (uint64 arithmetic)."""
    right = xp.right_shift(mag, xp.clip(sh, 0, 63).astype(np.uint64))
    left = xp.left_shift(mag, xp.clip(-sh, 0, 63).astype(np.uint64))
    return xp.where(sh >= 0, right, left) & mask


def _row_digits(xp: ModuleType, x: Any, beta: int, budget: int | None = None) -> tuple[Any, Any]:
    """Per row of ``x``: int64 ``e`` with ``|x[i,:]| < 2**e`` (0 for an all-zero row) and the
    number of base-``2**β`` digits below ``2**e`` that hold every set bit of the row.

    Reads ``x`` in blocks of bounded size (two passes; ``budget`` as in :func:`_tile_shape`),
    so its memory is bounded too."""
    rows, cols = x.shape
    block = max(1, (_MEMORY_BUDGET if budget is None else budget) // 128)
    rb = min(rows, max(1, block // max(cols, 1)))
    cb = min(cols, max(1, block // rb)) if cols else 1
    amax = xp.zeros(rows, dtype=np.float64)
    for r0 in range(0, rows, rb):
        for c0 in range(0, cols, cb):
            blk = x[r0 : r0 + rb, c0 : c0 + cb]
            amax[r0 : r0 + rb] = xp.maximum(amax[r0 : r0 + rb], xp.abs(blk).max(axis=1))
    e = xp.frexp(amax)[1].astype(np.int64)
    span = xp.zeros(rows, dtype=np.int64)
    for r0 in range(0, rows, rb):
        er = e[r0 : r0 + rb, None]
        for c0 in range(0, cols, cb):
            mag, lsb = _significands(xp, x[r0 : r0 + rb, c0 : c0 + cb])
            low = xp.where(mag != 0, lsb + _ctz53(xp, mag), er)  # exponent of the lowest bit
            span[r0 : r0 + rb] = xp.maximum(span[r0 : r0 + rb], (er - low).max(axis=1))
    return e, xp.maximum(1, -(-span // beta))


def _digits(xp: ModuleType, x: Any, e: Any, beta: int, count: int) -> list[Any]:
    """Signed float64 digit matrices ``D_s`` (``count`` of them, enough for every set bit, see
    :func:`_row_digits`) with ``x = Σ_s D_s·2**(e − β(s+1))`` exactly."""
    mag, lsb = _significands(xp, x)
    mask = np.uint64((1 << beta) - 1)
    sign = xp.where(x < 0, -1.0, 1.0)
    out = []
    for s in range(count):
        sh = (e - beta * (s + 1)) - lsb
        out.append(_shift_digit(xp, mag, sh, mask).astype(np.float64) * sign)
    return out


def _ctz53(xp: ModuleType, mag: Any) -> Any:
    """Trailing zero count of nonzero uint64 values below 2**53 (exact via frexp)."""
    low_bit = (mag & (~mag + np.uint64(1))).astype(np.float64)  # a power of two, exact
    _, e = xp.frexp(low_bit)
    return e.astype(np.int64) - 1


def _bitlen(xp: ModuleType, x: Any) -> Any:
    """Bit length of uint64 values (exact: each 32-bit half converts to float64 exactly)."""
    hi = (x >> np.uint64(32)).astype(np.float64)
    lo = (x & np.uint64(0xFFFFFFFF)).astype(np.float64)
    _, ehi = xp.frexp(hi)
    _, elo = xp.frexp(lo)
    return xp.where(hi > 0, ehi.astype(np.int64) + 32, elo.astype(np.int64))


# --------------------------------------------------------------------------------- limbs


def _add_products(xp, limbs: dict[int, Any], da: list, db: list, g_max: int) -> None:
    """``limbs[g_max − (s+t)] += DA_s @ DB_t`` for every digit pair (int64, exact)."""
    shape = (da[0].shape[0], db[0].shape[1])
    for s, d_a in enumerate(da):
        for t, d_b in enumerate(db):
            l = g_max - (s + t)
            if l not in limbs:
                limbs[l] = xp.zeros(shape, dtype=np.int64)
            _add_product(xp, limbs[l], d_a, d_b)


def _finish(xp, limbs, c, base, beta, g_max, p, emin, emax):
    """Add ``c`` to the exact limb sums of a tile and round once; see the module docstring.

    limbs[l] has weight 2^(base − β(g_max + 2) + β·l); l = g_max − g for the products."""
    unit = base - beta * (g_max + 2)
    shape = base.shape
    lo, hi = (min(limbs), max(limbs)) if limbs else (0, 0)
    if c is not None:
        digits, idx, shift = _c_digits(xp, c, unit, beta, g_max)
        lo = min(lo, int(idx.min()))
        hi = max(hi, int(idx.max()) + len(digits) - 1)
    stack = xp.zeros((hi - lo + 1,) + shape, dtype=np.int64)
    if c is not None:
        # C's digit kk goes to limb idx + kk: one scatter per digit, every (limb, element)
        # pair written once, whatever C's exponent range
        flat = stack.reshape(stack.shape[0], -1)
        pos = xp.arange(flat.shape[1])
        row = (idx - lo).ravel()
        for kk, d in enumerate(digits):
            flat[row + kk, pos] = d.ravel()
        del digits, flat, pos, row
    for l in list(limbs):
        stack[l - lo] += limbs.pop(l)
    # Sign of the exact value from a carry-only pass, then the magnitude's limbs in place.
    negative = _top_carry(xp, stack, beta) < 0
    mag_limbs, carry = _normalise(xp, stack, beta, xp.where(negative, -1, 1).astype(np.int64))
    while bool((carry != 0).any()):  # the top carry can span several limbs
        nxt = carry & np.int64((1 << beta) - 1)
        mag_limbs = xp.concatenate([mag_limbs, nxt[None]])
        carry = carry >> np.int64(beta)
    m, sticky, q, top = _leading_bits(xp, mag_limbs, unit + beta * lo, beta)
    if c is not None:
        # Where C was moved (shift ≠ 0) and its limbs hold the top bit, the top 63 bits are C's
        # own and lie shift limbs off: C moved down (shift < 0) is above every product bit;
        # C moved up is on top only where the products sum to 0 (else the top is limb ≥ −1).
        c_top = (shift < 0) | ((shift > 0) & (top + lo < -1))
        q = xp.where(c_top, q - beta * shift, q)
    value = _round_rne(xp, m, sticky, q, p, emin, emax)
    return xp.where(negative, -value, value)


def _add_product(xp, acc: Any, d_a: Any, d_b: Any) -> None:
    """``acc += d_a @ d_b`` (int64), the float64 GEMM exact (integer partial sums < 2**53).

    Digit matrices beyond the first are mostly zero (only elements spanning many binades below
    their row's maximum reach them), so the GEMM is restricted to the rows, inner indices and
    columns that hold nonzeros whenever that removes at least half of one of them.
    """
    kk = (d_a != 0).any(axis=0) & (d_b != 0).any(axis=1)
    n_k = int(kk.sum())
    if n_k == 0:
        return
    if n_k < 0.5 * kk.size:
        d_a, d_b = d_a[:, kk], d_b[kk]
    rows = (d_a != 0).any(axis=1)
    cols = (d_b != 0).any(axis=0)
    if int(rows.sum()) < 0.5 * rows.size or int(cols.sum()) < 0.5 * cols.size:
        ri, ci = xp.nonzero(rows)[0], xp.nonzero(cols)[0]
        prod = (d_a[ri] @ d_b[:, ci]).astype(np.int64)
        acc[ri[:, None], ci[None, :]] += prod
    else:
        acc += (d_a @ d_b).astype(np.int64)


def _c_digits(xp, c: Any, unit: Any, beta: int, g_max: int) -> tuple[list[Any], Any, Any]:
    """``c`` as signed int64 base-2**β digits on the tile's limb grid, in a bounded band of limbs.

    Returns ``digits`` (``nd`` arrays, ``|d| < 2**β``), the int64 limb ``idx`` of digit 0 and
    the ``shift`` in limbs: ``c = Σ_kk digits[kk]·2**(unit + β·(idx + kk − shift))``.

    The products' sum P is a multiple of ``2**unit`` (limb 0) below limb ``g_max + ⌈64/β⌉``
    (int64 limb sums are below 2**63). A ``c`` more than ``gap = ⌈63/β⌉`` limbs (≥ 63 bits)
    above that, or below limb 0, is moved to that distance (``shift ≠ 0``). Before and after
    the move, the lower part is below 2**-63 of the upper part's lowest bit, so the top 63
    bits of ``|P + c|`` hold only the upper part's bits and then zeros (same signs) or ones
    (opposite signs, borrowed), and the bits below are nonzero exactly when the lower part is:
    the top 63 bits and the sticky bit of :func:`_leading_bits` are unchanged, and only their
    exponent moves by ``β·shift`` where the moved ``c`` holds the top (corrected in
    :func:`_finish`). So the limbs span at most ``g_max + ⌈64/β⌉ + 2·(gap + nd)``, whatever
    ``c``'s exponent range."""
    mag, lsb = _significands(xp, c)
    nz = mag != 0
    off = xp.where(nz, lsb - unit, 0)  # c = mag·2^(unit + off)
    u0 = off // beta
    rem = (off - u0 * beta).astype(np.uint64)  # c = (mag·2^rem)·2^(unit + β·u0)
    nd = -(-(53 + beta - 1) // beta)  # mag·2^rem < 2^(53 + β − 1) ≤ 2^(β·nd)
    gap = -(-63 // beta)
    idx = xp.clip(u0, -gap - nd, g_max + -(-64 // beta) + gap)
    sign = xp.where(c < 0, -1, 1).astype(np.int64)
    mask = np.uint64((1 << beta) - 1)
    digits = []
    for kk in range(nd):
        if kk == 0:
            d = (mag << rem) & mask
        else:
            d = (mag >> (np.uint64(beta * kk) - rem)) & mask
        digits.append(d.astype(np.int64) * sign)
    return digits, idx, idx - u0


def _top_carry(xp, stack: Any, beta: int) -> Any:
    """The top carry of normalising int64 limbs (see :func:`_normalise`), without writing them:
    negative exactly when the value is."""
    carry = xp.zeros(stack.shape[1:], dtype=np.int64)
    for l in range(stack.shape[0]):
        carry = (stack[l] + carry) >> np.int64(beta)
    return carry


def _normalise(xp, stack: Any, beta: int, sign: Any = None) -> tuple[Any, Any]:
    """Carry-propagate int64 limbs (times ``sign``, ±1 per element, if given) into [0, 2**β)
    from the bottom, in place; returns (limbs, top carry)."""
    mask = np.int64((1 << beta) - 1)
    carry = xp.zeros(stack.shape[1:], dtype=np.int64)
    for l in range(stack.shape[0]):
        v = (stack[l] if sign is None else stack[l] * sign) + carry
        carry = v >> np.int64(beta)  # floor division: arithmetic shift
        stack[l] = v & mask
    return stack, carry


def _leading_bits(xp, limbs: Any, unit: Any, beta: int) -> tuple[Any, Any, Any, Any]:
    """Top 63 bits ``m`` (uint64, 0 for a zero value) of a nonnegative base-2**β limb number,
    a sticky flag (any lower bit set), the exponent ``q`` of m's lowest bit and the index of
    the top nonzero limb; limb ``l`` weighs ``2**(unit + β·l)``."""
    n_limbs = limbs.shape[0]
    nonzero = limbs != 0
    top = n_limbs - 1 - xp.argmax(nonzero[::-1], axis=0)  # most significant nonzero limb
    bottom = xp.argmax(nonzero, axis=0)  # least significant one
    steps = -(-63 // beta) + 2
    b = np.uint64(beta)
    one = np.uint64(1)
    m = xp.zeros(limbs.shape[1:], np.uint64)
    sticky = xp.zeros(limbs.shape[1:], bool)
    q = xp.zeros(limbs.shape[1:], np.int64)
    for off in range(steps):
        at = top - off
        limb = xp.take_along_axis(limbs, xp.maximum(at, 0)[None], axis=0)[0].astype(np.uint64)
        limb = xp.where(at >= 0, limb, np.uint64(0))
        sh = xp.clip(63 - _bitlen(xp, m), 0, beta).astype(np.uint64)
        m = (m << sh) | (limb >> (b - sh))
        sticky |= (limb & ((one << (b - sh)) - one)) != 0
        q = xp.where(sh > 0, unit + beta * at + (b - sh).astype(np.int64), q)
    sticky |= (bottom <= top - steps) & (m != 0)  # a nonzero limb below the last one read
    return m, sticky, q, top


def _round_rne(xp, m: Any, sticky: Any, q: Any, p: int, emin: int, emax: int) -> Any:
    """Nonnegative ``(m + δ)·2**q`` (0 ≤ δ < 1, δ > 0 iff sticky) rounded to nearest-even at
    precision ``p`` with gradual underflow below ``2**emin`` and overflow above emax; float64."""
    bl = _bitlen(xp, m)
    e = q + bl - 1
    keep = xp.where(e >= emin, p, p - (emin - e))
    drop = bl - keep  # ≥ 8 whenever sticky can be set, since bl ≥ 61 then
    exact = drop <= 0
    d = xp.clip(drop, 1, 64).astype(np.uint64)
    one = np.uint64(1)
    r = xp.where(d >= 64, np.uint64(0), m >> xp.minimum(d, np.uint64(63)))
    rem = xp.where(d >= 64, m, m & ((one << xp.minimum(d, np.uint64(63))) - one))
    half = one << (d - one)
    up = (rem > half) | ((rem == half) & (sticky | ((r & one) == one)))
    r = r + up.astype(np.uint64)
    r = xp.where(exact, m, r)
    scale = xp.where(exact, q, q + drop)
    with np.errstate(over="ignore"):
        value = xp.ldexp(r.astype(np.float64), scale.astype(np.int32) if xp is not np else scale)
    limit = (2.0 - 2.0 ** (1 - p)) * 2.0**emax  # the format's largest finite value
    return xp.where(value > limit, np.inf, value)
