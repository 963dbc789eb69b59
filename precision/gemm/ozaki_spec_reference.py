"""An independent CPU reference of Ozaki scheme II's specification (docs/ozaki.md, "Scheme
II"), for the checks of its kernels (:mod:`precision.gemm.ozaki_cuda_check` on a GPU,
:mod:`precision.gemm.ozaki_host` on the CPU, both run by
``tests/gemm/test_ozaki_cuda_host.py``).

Written from the formulas of docs/ozaki.md, not from :mod:`precision.gemm.ozaki` (whose
emulator and CUDA host code it checks), with exact integer numpy and Python integers.

**Re-derived here** (nothing of :mod:`precision.gemm.ozaki` or :mod:`precision.limbs` is used):

- the line statistics, the squared-norm bound ``nfix`` included (:func:`ref_stats`);
- the CRT budget ``q2`` (:func:`spec_q2`): the largest ``q2 >= 0`` with
  ``(2^(q2/2) + (isqrt(K-1) + 2)/2)^2 <= M·(1/2 - 2^-20)``, decided exactly (Fractions, the
  irrational ``2^(q2/2)`` of an odd ``q2`` by squaring);
- the scale exponents (:func:`spec_shifts`): per line the largest ``s`` with
  ``4^s·nfix·2^(2·emax - 40) <= 2^q2`` and ``s + emax <= 62``, by Python-int comparisons;
- the scaled integers ``rint(x·2^s)`` (:func:`ref_scaled`);
- ``T = A'·B'`` exactly, as Python ints (:func:`exact_product`: signed base-2^21 digits,
  float64 BLAS products of sums below 2^53, so exact);
- the output ``RN(T·2^-(s_i+t_j))`` in fp64 / fp32 (:func:`round_exact`): round to nearest
  even on the Python integer, gradual underflow, ±Inf on overflow, ``-0.0`` for a negative
  value that rounds to zero;
- the CRT weights ``w_l = (M/m_l)·((M/m_l)^-1 mod m_l)`` (:func:`crt_weights`, Python
  ``pow``), with which :func:`reference` replays the CRT on sampled outputs: residues, the
  residue products, ``S``, the nearest quotient and ``T = S - q·M`` (``crt_bad``).

**Shared with :mod:`precision.gemm.ozaki`** (specification constants and containers, or out of
this module's scope):

- :data:`~precision.gemm.ozaki.MODULI`, the list of moduli (a constant of the specification);
- :class:`~precision.gemm.ozaki.LineStats`, a container (:func:`line_stats` fills it from
  :func:`ref_stats` for the callers' ``auto_terms`` and special values);
- the NaN/±Inf outputs: :func:`reference` writes them with
  :func:`precision.gemm.ozaki.apply_specials` (that rule is checked against IEEE arithmetic
  in ``tests/gemm/test_ozaki_edges.py``, and the kernels' special values against it in
  ``tests/gemm/test_ozaki_specials_kernel.py``); every finite output is this module's own.

Where the implementation departs from the formula, as docs/ozaki.md says: for 2 moduli and
some K of 31685 or more, :func:`precision.gemm.ozaki.crt_q2` is one below the largest ``q2``
the condition allows (it rounds the line budget to an integer first; 3606 of the K for 2
moduli, none for 3 to 20 moduli, all K up to 131071 checked). Such a case would show here as
a mismatch (``tests/gemm/test_ozaki_spec_reference.py`` pins it).

:func:`make_operands` draws the checks' inputs.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from precision.distributions import get_distribution
from precision.gemm.ozaki import MODULI, LineStats, apply_specials

#: The low 32 bits of an integer (the kernels' limbs; used by the host checks).
MASK32 = (1 << 32) - 1

#: IEEE 754 binary formats of the targets: (precision p, emin, emax, numpy dtype).
IEEE_TARGETS: dict[str, tuple[int, int, int, Any]] = {
    "fp64": (53, -1022, 1023, np.float64),
    "fp32": (24, -126, 127, np.float32),
}
#: docs/ozaki.md: ``nfix`` has 40 fraction bits relative to ``4^emax``.
SPEC_NORM_FRAC = 40
#: docs/ozaki.md: the scaled integers stay ``<= 2^62`` (``s + emax <= 62``).
SPEC_QMAX = 62
#: docs/ozaki.md: ``|T| <= M·(1/2 - 2^-20)``.
SPEC_MARGIN_LOG2 = 20

#: a_ij = (U(0,1) - 0.5)·exp(phi·N(0,1)) with a correctly rounded exp (float64), as the runner
#: draws it: the same bits on any host.
exp_rand = get_distribution("exp_rand").func


def sym_mod(x: np.ndarray, m: int) -> np.ndarray:
    """Symmetric residue in [-floor(m/2), ceil(m/2) - 1] of int64 ``x``."""
    r = np.mod(x, m)
    return np.where(r > (m - 1) // 2, r - m, r)


def sym_int(v: int, m: int) -> int:
    """Symmetric residue in [-floor(m/2), ceil(m/2) - 1] of the Python integer ``v``."""
    r = v % m
    return r - m if r > (m - 1) // 2 else r


# ------------------------------------------------------------------ the spec's budget and scales


def spec_crt_bound(moduli: tuple[int, ...]) -> Fraction:
    """``M·(1/2 - 2^-20)``, ``M`` the product of ``moduli``: the largest ``|T|`` the spec lets
    the reconstruction meet (exact)."""
    return math.prod(moduli) * (Fraction(1, 2) - Fraction(1, 2**SPEC_MARGIN_LOG2))


def spec_q2(moduli: tuple[int, ...], k: int) -> int:
    """The spec's norm budget: the largest integer ``q2 >= 0`` with
    ``(2^(q2/2) + c)^2 <= M·(1/2 - 2^-20)``, ``c = (isqrt(K - 1) + 2)/2 >= sqrt(K)/2`` (the
    exact stand-in for ``sqrt(K)/2`` that docs/ozaki.md names); -1 when even ``q2 = 0`` fails.
    Decided exactly: an even ``q2 = 2h`` compares ``(2^h + c)^2``; an odd ``q2 = 2h + 1``
    compares ``2c·2^h·sqrt(2) <= bound - 2^q2 - c^2`` squared (both sides non-negative)."""
    bound = spec_crt_bound(moduli)
    c = Fraction(math.isqrt(max(k, 1) - 1) + 2, 2)

    def fits(q: int) -> bool:
        h = q // 2
        if q % 2 == 0:
            return (2**h + c) ** 2 <= bound
        rest = bound - 2**q - c * c
        return rest >= 0 and 8 * c * c * 4**h <= rest * rest

    if not fits(0):
        return -1
    q = math.prod(moduli).bit_length()  # 2^q > M: fails
    while not fits(q):
        q -= 1
    return q


def spec_top_exponent(nfix: int, q2: int) -> int:
    """The largest integer ``t <= 62`` with ``nfix·4^t <= 2^(q2 + 40)``: the exponent
    ``s + emax`` the spec scales a line with norm bound ``nfix >= 1`` to (then
    ``4^s·nfix·2^(2·emax - 40) <= 2^q2``). Python-int comparisons, no logarithms."""
    if nfix < 1:
        raise ValueError(f"nfix of a nonzero line is at least 1, got {nfix}")
    room = q2 + SPEC_NORM_FRAC  # nfix·2^(2t) <= 2^room

    def fits(t: int) -> bool:
        x = room - 2 * t
        return x >= 0 and nfix <= 1 << x

    t = (room - nfix.bit_length()) // 2  # a guess, then up and down to the largest t
    while fits(t + 1):
        t += 1
    while not fits(t):
        t -= 1
    return min(t, SPEC_QMAX)


def spec_shifts(emax: np.ndarray, nfix: np.ndarray, zero: np.ndarray, q2: int) -> np.ndarray:
    """Per line the spec's scale exponent ``s = spec_top_exponent(nfix, q2) - emax``; 0 for an
    all-zero line (int64)."""
    out = [
        0 if z else spec_top_exponent(int(nf), q2) - int(em)
        for em, nf, z in zip(emax.tolist(), nfix.tolist(), zero.tolist(), strict=True)
    ]
    return np.array(out, dtype=np.int64)


# --------------------------------------------------------------------- statistics and scaling


def ref_stats(X: np.ndarray, axis: int) -> dict[str, np.ndarray]:
    """The spec's line statistics of rows (``axis=1``) or columns (``axis=0``): exact numpy
    integers (frexp exponents and mantissas are exact; mu = ceil(256 f) exactly). ``nfix`` is
    ``sum ceil(mu^2·2^(2(e - emax) + 40 - 16))`` over the nonzero finite entries
    (``|x| <= mu·2^(e-8)``), so ``sum x^2 <= nfix·2^(2·emax - 40)``; int64 sums, exact for
    ``K < 2^23``."""
    Xl = X if axis == 1 else X.T
    fin = np.isfinite(Xl)
    mag = np.where(fin, np.abs(Xl), 0.0)
    f, e = np.frexp(mag)
    e = e.astype(np.int64)
    nz = mag > 0
    count = nz.sum(axis=1)
    emax = np.where(count > 0, np.where(nz, e, -(10**6)).max(axis=1), 0)
    mu = np.ceil(f * 256.0).astype(np.int64)
    mu2 = mu * mu
    d = 2 * (e - emax[:, None]) + 24
    k = np.clip(-d, 0, 17)
    down = np.where(k >= 17, 1, (mu2 + (np.int64(1) << k) - 1) >> k)
    term = np.where(d >= 0, mu2 << np.clip(d, 0, 24), down)
    nfix = np.where(nz, term, 0).sum(axis=1)
    return {
        "emax": emax,
        "esum": np.where(nz, e, 0).sum(axis=1),
        "count": count,
        "nfix": nfix,
        "bad": ~fin.all(axis=1),
        "zero": count == 0,
    }


def ref_scaled(X: np.ndarray, s: np.ndarray, axis: int) -> np.ndarray:
    """``rint(X·2^s)`` per line as int64 (0 for NaN/Inf): the float64 scaling is exact or
    underflows below 1/2, and the integer-valued result (<= 2^62) converts exactly."""
    sx = s[:, None] if axis == 1 else s[None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        y = np.rint(np.ldexp(np.where(np.isfinite(X), X, 0.0), sx))
    assert np.all(np.abs(y) <= 2.0**62), "scaled integer above 2^62"
    return y.astype(np.int64)


def line_stats(st: dict[str, np.ndarray]) -> LineStats:
    """:class:`LineStats` from :func:`ref_stats` (with ``nfix`` when the class has it)."""
    names = [f for f in LineStats.__dataclass_fields__ if f in st]
    return LineStats(**{f: st[f] for f in names})


# ---------------------------------------------------------------------- the exact product


#: K per float64 BLAS product in :func:`exact_product`: digit products below 2^41 (|d| <= 2^20
#: + 1), 2048 of them sum below 2^52 < 2^53, so every partial sum is an exact integer.
_K_CHUNK = 2048


def _digits21(y: np.ndarray) -> list[np.ndarray]:
    """Signed base-2^21 digits (float64) of int64 ``y`` (|y| <= 2^62):
    ``y = d0 + d1·2^21 + d2·2^42``, d0 and d1 in [-2^20, 2^20), |d2| <= 2^20 + 1."""
    out = []
    v = y.copy()
    for _ in range(2):
        d = ((v & ((1 << 21) - 1)) ^ (1 << 20)) - (1 << 20)
        out.append(d.astype(np.float64))
        v = (v - d) >> 21
    out.append(v.astype(np.float64))
    return out


def exact_product(ya: np.ndarray, yb: np.ndarray) -> np.ndarray:
    """``T = ya @ yb`` exactly (int64 operands, entries ``<= 2^62``), as an object array of
    Python ints. Per digit pair and K chunk of :data:`_K_CHUNK` a float64 BLAS product (exact:
    integers below 2^53); the chunk sums per digit weight ``2^(21g)`` in int64 (below
    ``3·K·(2^20 + 1)^2 < 2^63`` for ``K <= 2^20``), then ``T = sum_g G_g·2^(21g)`` in Python
    ints."""
    k = ya.shape[1]
    if k > 1 << 20:
        raise ValueError(f"exact_product: K = {k} > 2^20")
    shape = (ya.shape[0], yb.shape[1])
    G = [np.zeros(shape, dtype=np.int64) for _ in range(5)]
    for k0 in range(0, k, _K_CHUNK):
        da = _digits21(ya[:, k0 : k0 + _K_CHUNK])
        db = _digits21(yb[k0 : k0 + _K_CHUNK])
        for p in range(3):
            for q in range(3):
                G[p + q] += (da[p] @ db[q]).astype(np.int64)
    T = np.zeros(shape, dtype=object)
    for g in range(5):
        T += G[g].astype(object) * (1 << (21 * g))
    return T


# ------------------------------------------------------------------------- the one rounding


def round_int(T: int, e: int, target: str) -> float:
    """``RN(T·2^e)`` in ``target`` ("fp64" or "fp32", :data:`IEEE_TARGETS`) for Python ints
    ``T`` and ``e``, as a Python float (exact: the result is a float64 value): round to nearest,
    ties to even, at ``p`` significant bits or the subnormal quantum ``2^(emin - p + 1)``,
    whichever is coarser; ``±Inf`` where the rounded magnitude (unbounded exponent) reaches
    ``2^(emax + 1)``; ``+0.0`` for ``T = 0`` and ``-0.0`` for a negative ``T`` that rounds to 0.
    Integer steps only."""
    if T == 0:
        return 0.0
    p, emin, emax, _ = IEEE_TARGETS[target]
    n = -T if T < 0 else T
    q = max(n.bit_length() + e - p, emin - p + 1)  # the quantum: n·2^e ~ m·2^q
    sh = q - e
    if sh <= 0:
        m = n << -sh
    else:
        m = n >> sh
        rem = n - (m << sh)
        half = 1 << (sh - 1)
        if rem > half or (rem == half and m & 1):
            m += 1
    if m.bit_length() - 1 + q > emax:  # m·2^q >= 2^(emax + 1)
        x = math.inf
    else:
        x = math.ldexp(float(m), q)  # m <= 2^p: exact
    return -x if T < 0 else x


def round_exact(T: np.ndarray, e: np.ndarray, target: str) -> np.ndarray:
    """:func:`round_int` of every element of the object array ``T`` with exponents ``e``
    (broadcast to ``T``'s shape), as an array of the target's dtype (an exact conversion)."""
    dtype = IEEE_TARGETS[target][3]
    e = np.broadcast_to(e, T.shape)
    out = [round_int(t, x, target) for t, x in zip(T.ravel().tolist(), e.ravel().tolist(),
                                                   strict=True)]  # fmt: skip
    return np.array(out, dtype=np.float64).reshape(T.shape).astype(dtype)


# ------------------------------------------------------------------------------- the CRT


def crt_weights(moduli: tuple[int, ...]) -> list[int]:
    """``w_l = (M/m_l)·((M/m_l)^-1 mod m_l)`` (docs/ozaki.md, step 4), Python ints:
    ``w_l = 1 (mod m_l)`` and ``0`` modulo the other moduli."""
    M = math.prod(moduli)
    return [(M // m) * pow(M // m, -1, m) for m in moduli]


def crt_replay(a: list[int], b: list[int], moduli: tuple[int, ...], w: list[int]) -> int:
    """The spec's CRT for one output, Python ints: residues of the scaled line pair, the
    residue products ``C_l = sum a_l·b_l``, ``c_l = C_l mod m_l`` (symmetric), ``S = sum
    c_l·w_l``, the nearest quotient ``q`` of ``S/M`` (no ties: ``|T| < M/2``), ``S - q·M``."""
    M = math.prod(moduli)
    S = 0
    for m, wl in zip(moduli, w, strict=True):
        C = sum(sym_int(x, m) * sym_int(y, m) for x, y in zip(a, b, strict=True))
        S += sym_int(C, m) * wl
    q = (2 * S + M) // (2 * M)
    return S - q * M


# ----------------------------------------------------------------------------- the result


def reference(
    A: np.ndarray, B: np.ndarray, L: int, target: str, crt_samples: int = 64
) -> dict[str, Any]:
    """The spec's result for ``L`` moduli: ``D`` (the target's dtype), the statistics ``sa`` /
    ``sb``, shifts ``s_a`` / ``s_b``, scaled integers ``ya`` / ``yb``, ``q2``, the exact
    ``T`` (object array), ``t_over_mb`` = ``max |T| / floor(M·(1/2 - 2^-20))`` (the
    Cauchy-Schwarz bound says <= 1) and ``crt_bad``: of ``crt_samples`` random outputs, those
    where the CRT replay (:func:`crt_replay`) misses ``T``."""
    K = A.shape[1]
    moduli = tuple(MODULI[:L])
    q2 = spec_q2(moduli, K)
    sa, sb = ref_stats(A, 1), ref_stats(B, 0)
    s_a = spec_shifts(sa["emax"], sa["nfix"], sa["zero"], q2)
    s_b = spec_shifts(sb["emax"], sb["nfix"], sb["zero"], q2)
    ya, yb = ref_scaled(A, s_a, 1), ref_scaled(B, s_b, 0)
    T = exact_product(ya, yb)
    e = -(s_a[:, None] + s_b[None, :])
    D = round_exact(T, e, target)
    hs = [line_stats(s) for s in (sa, sb)]
    apply_specials(D, A, B, hs[0], hs[1], target)
    Mb = math.floor(spec_crt_bound(moduli))
    tmax = max((abs(t) for t in T.ravel().tolist()), default=0)
    ratio = float(Fraction(tmax, Mb))
    rng = np.random.default_rng(1)
    w = crt_weights(moduli)
    crt_bad = 0
    for _ in range(crt_samples if T.size else 0):
        i, j = int(rng.integers(A.shape[0])), int(rng.integers(B.shape[1]))
        got = crt_replay(ya[i].tolist(), yb[:, j].tolist(), moduli, w)
        crt_bad += int(got != T[i, j])
    return {"D": D, "sa": sa, "sb": sb, "s_a": s_a, "s_b": s_b, "ya": ya, "yb": yb,
            "q2": q2, "T": T, "t_over_mb": ratio, "crt_bad": crt_bad}  # fmt: skip


def make_operands(n: int, phi: float, seed: int, specials: bool) -> tuple[np.ndarray, np.ndarray]:
    """exp_rand operands a = (U(0,1) - 0.5)·exp(phi·N(0,1)), n x n; ``specials`` adds NaN,
    ±Inf, an all-Inf row, zero rows/columns and subnormals."""
    rng = np.random.default_rng(seed)
    A = exp_rand(rng, (n, n), phi=phi)
    B = exp_rand(rng, (n, n), phi=phi)
    if specials:  # indices taken modulo n (n >= 16)
        A[3, 5] = np.nan
        A[10, 0] = np.inf
        A[70 % n, :] = -np.inf
        A[50 % n, :] = 0.0
        A[60 % n, 1:4] = [5e-310, -3e-320, 2.2e-308]
        A[61 % n, :] = 1e-310 * (rng.random(n) - 0.5)  # a subnormal row
        B[7, 20 % n] = -np.inf
        B[:, 30 % n] = 0.0
        B[2, 40 % n] = -4e-320
    return A, B


def float_bits(x: np.ndarray) -> np.ndarray:
    """The bits of a float64 (uint64) or float32 (uint32) array, for bit-for-bit comparisons."""
    return x.view(np.uint64 if x.dtype == np.float64 else np.uint32)
