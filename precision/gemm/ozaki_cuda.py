"""Ozaki scheme II on the GPU: our kernels (``precision/kernels/ozaki2.cu``) for the line
statistics and shifts, the int8 residues and the CRT reconstruction; the INT8 GEMMs are
cuBLAS's (``gemm="cublas"``, int32 product planes) or the fused modular GEMM
(``gemm="fused"``, :mod:`precision.gemm.ozaki_gemm_launch`, int8 residue planes).

The spec (every step exact, so any order of evaluation gives the same bits):

* Line statistics of A's rows / B's columns over the nonzero finite entries (NaN/±Inf set
  ``bad`` and count as 0): ``emax`` (frexp exponent of the largest magnitude; 0 and ``zero``
  for an all-zero line), ``esum``/``count`` (frexp exponents), and ``nfix = sum term(x)`` with
  ``mu = ceil(|x|·2^(8-e))`` in [128, 256], ``d = 2(e - emax) + 24``,
  ``term = mu²·2^d`` (``d >= 0``) else ``ceil(mu²/2^-d)``: ``||line||² <= nfix·2^(2·emax-40)``.
* Shift per line: ``s = min(floor((Q2 + 40 - clog2(nfix))/2), 62) - emax`` (0 for a zero
  line), ``clog2(n)`` = bit length of ``n - 1``; ``Q2`` is the plan's ``q2``
  (:func:`precision.gemm.ozaki.crt_q2`, host).
* ``y = rint(x·2^s)`` (|y| <= 2^62), int8 symmetric residues per modulus, exact INT8 GEMMs,
  CRT (``T = S - q·M``), ``D = RN(T·2^-(s_i + t_j))`` in the target.

No host round trip and no device synchronisation for an int ``terms``: the shifts are written
by the statistics kernels, and the outputs that NaN/±Inf inputs reach are written by a last
kernel that finds them from the lines' ``bad`` flags (:func:`write_specials`; the values of
:func:`~precision.gemm.ozaki.special_block`). A call returns once its kernels are queued, as
CuPy's own ``matmul`` does. ``terms="auto"`` reduces the statistics to one int on the device
and reads that back to pick the moduli (:func:`device_auto_terms`).

Workspace beyond inputs and output, per block of ``mb`` rows of A and ``nb`` columns of B
(:func:`cuda_blocks`): the int8 residues of A's rows (``L·mbp·Kp`` bytes) and of B's columns
(``L·nbp·Kp``) and the product planes (int32: ``4·L·mbp·nbp``; fused: int8); the blocks keep
it within ``workspace_factor`` times the size of A and B as the kernels read them
(:func:`precision.gemm.ozaki.input_bytes`), or half the float64 size of the output where that
is larger (thin K, as the emulator). A is one block of rows unless its residues alone would
outgrow that. K and ``nb`` are padded to 16 (cuBLAS) or 128 (fused, also the rows) with zero
residues (exact).

Inputs: when A and B are both float32 (or float16, or one of each) the kernels read them as
float32 (the module built with ``-DOZ_IN=float``, :data:`IN_FLAGS`; float16 is copied to
float32 first) and convert each entry to double in registers, which is exact, so no float64
copy of A or B is made and the bits are those of the float64-converted inputs; any other mix
(float64 with float32) is copied to float64 first. Non-contiguous inputs get a C-contiguous
copy in their own dtype. CuPy is imported lazily; nothing here runs without a GPU.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

import numpy as np

from precision.gemm.ozaki import (
    INT8_KMAX,
    OUTPUT_SHARE,
    TARGETS,
    LineStats,
    OzakiPlan,
    check_args,
    crt_constants,
    crt_limbs,
    crt_weights,
    fewest_moduli,
    input_bytes,
    make_plan,
)

SOURCE = "ozaki2.cu"
#: Padding of K and of the column block: cuBLAS INT8 GEMMs (16), the fused GEMM (128, also M).
PAD: dict[str, int] = {"cublas": 16, "fused": 128}
#: Bytes per entry of the product planes: cuBLAS's int32 products, the fused GEMM's residues.
PLANE_BYTES: dict[str, int] = {"cublas": 4, "fused": 1}
GEMMS: tuple[str, ...] = tuple(PAD)
#: Largest row chunk of the column-statistics kernels (one thread per column and chunk).
_COL_CHUNK = 128
_NO_LINE = int(np.iinfo(np.int32).min)  # oz2_auto_need's "no line with a nonzero entry"
_THREADS = 256
#: Largest padded K for which A's rows go through ``oz2_rows_fused`` (statistics, shifts and
#: residues in one read of A; the row is staged in shared memory, 8 bytes per k: 192 KiB).
ROWS_FUSED_MAX_KP = 24576
_ROWS_FUSED_THREADS = 384  # ozaki2.cu OZ_ROWS_T
#: Rows per block of ``oz2_specials_*`` (ozaki2.cu kSpecialRows), of 256 columns each.
SPECIAL_ROWS = 256


#: The kernels' input element type (``OZ_IN`` in ozaki2.cu and ozaki1.cu) -> nvcc flags: "f64"
#: reads A and B as float64 (the default build), "f32" as float32 (``-DOZ_IN=float``), each
#: entry converted to double in registers (exact): the same values, so the same bits.
IN_FLAGS: dict[str, tuple[str, ...]] = {"f64": (), "f32": ("-DOZ_IN=float",)}


def raw_module(source: str, what: str, inp: str = "f64") -> Any:
    """The CuPy module of a kernel source of this package, built for sm_90 (cached cubin) to
    read inputs of kind ``inp`` (:data:`IN_FLAGS`); ``what`` names the kernels in the error
    when no GPU is there."""
    from precision.gpu import require_gpu
    from precision.kernels.build import build_cubin

    cp = require_gpu(what)
    return cp.RawModule(path=str(build_cubin(source, arch="sm_90", extra_flags=IN_FLAGS[inp])))


@functools.cache
def _module(inp: str) -> Any:
    """The kernels' module for inputs of kind ``inp`` (:data:`IN_FLAGS`;
    no default, so that every call caches under the same key)."""
    return raw_module(SOURCE, "the Ozaki-II kernels", inp)


#: Kernels already looked up (:func:`function_of`), by (module getter, input kind, name).
_FUNCTIONS: dict[tuple[Callable[[str], Any], str, str], Any] = {}
#: Dynamic shared memory a kernel is allowed at its first lookup: ``oz2_rows_fused`` stages a
#: row of up to :data:`ROWS_FUSED_MAX_KP` doubles.
_DYNAMIC_SMEM: dict[str, int] = {"oz2_rows_fused": 8 * ROWS_FUSED_MAX_KP}


def function_of(module: Callable[[str], Any], name: str, inp: str) -> Any:
    """The kernel ``name`` of the module ``module(inp)`` (input kind ``inp``,
    :data:`IN_FLAGS`), looked up once and allowed its :data:`_DYNAMIC_SMEM` then: a lookup
    per launch cost host time on every call. Keyed by the getter in place, because the host
    replay (:func:`precision.gemm.ozaki_host.kernels_on_the_cpu`) swaps the modules' getters
    for a while, and a kernel looked up from either must not outlive the swap (a GPU test run
    after a host replay in one process launched the host kernel on CuPy arrays)."""
    key = (module, inp, name)
    if key not in _FUNCTIONS:
        kern = module(inp).get_function(name)
        if name in _DYNAMIC_SMEM:
            from precision.gpu import allow_dynamic_smem

            allow_dynamic_smem(kern, _DYNAMIC_SMEM[name], "the Ozaki kernels")
        _FUNCTIONS[key] = kern
    return _FUNCTIONS[key]


def _kernel(name: str, inp: str = "f64") -> Any:
    """:func:`function_of` this module's kernels (``ozaki2.cu``)."""
    return function_of(_module, name, inp)


def input_kind(X: Any) -> str:
    """The module (:data:`IN_FLAGS`) whose kernels read ``X``: "f32" for float32, else "f64"."""
    return "f32" if X.dtype == np.float32 else "f64"


def device_inputs(cp: Any, A: Any, B: Any) -> tuple[Any, Any]:
    """A and B as the C-contiguous device arrays the kernels read: float32 when both are
    float32 or float16 (float32 read as such, no copy; float16 converted, exactly), else
    float64 (a float32 and float64 mix, or other dtypes, converted; exactly for floats)."""
    narrow = (np.float16, np.float32)
    both32 = all(getattr(X, "dtype", None) in narrow for X in (A, B))
    dtype = cp.float32 if both32 else cp.float64

    def aligned(X: Any) -> Any:
        # the row kernel's quad loads (double2 / float4) need a 16-byte aligned start: a
        # contiguous view that starts within an allocation (x.ravel()[1:].reshape(...)) is
        # copied, as a non-contiguous one is
        X = cp.ascontiguousarray(cp.asarray(X, dtype=dtype))
        ptr = X.data.ptr if hasattr(X.data, "ptr") else X.ctypes.data  # (numpy: host replay)
        return X if ptr % 16 == 0 else X.copy()

    return aligned(A), aligned(B)


def round_up(x: int, m: int) -> int:
    """The smallest multiple of ``m`` that is >= ``x``."""
    return -(-x // m) * m


#: Narrowest column block (while N is wider) worth keeping before A's rows are blocked too:
#: one of the fused GEMM's 256-column tiles. On the H200 (float64, 15 moduli, n = 1024, burst)
#: 256 kept the column blocks of 256 and ran 0.61-0.66 ms, 512 took two row blocks and
#: 0.79-0.84 ms; at n = 2048 and 4096 the two agree, 1024 ran slower at 2048
#: (results/bench/ozaki_row_blocks_small_n_h200_2026-11-28/).
ROW_SPLIT_NB = 256


def _rows_padded(rows: int, gemm: str) -> int:
    """Rows of A's residue block as the GEMM reads it: as they are for cuBLAS, a multiple of
    128 for the fused GEMM (zero residues beyond the last row)."""
    return rows if gemm == "cublas" else round_up(rows, PAD["fused"])


def cuda_blocks(M: int, N: int, kp: int, L: int, gemm: str, budget: int) -> tuple[int, int]:
    """``(mb, nb)``: rows of A and columns of B per block of :func:`ozaki2_cuda`, so that the
    workspace ``L·mbp·kp`` (A's int8 residues) ``+ L·nb·kp`` (B's) ``+ c·L·mbp·nb`` (the
    product planes, ``c`` = 4 bytes for cuBLAS's int32, 1 for the fused GEMM's int8; ``mbp``
    = :func:`_rows_padded`) stays within ``budget`` bytes.

    All of A's rows form one block (their residues made once) where that leaves a column
    block of at least ``min(N, ROW_SPLIT_NB)`` columns (rounded up to the padding); otherwise
    the fewest blocks of rows (multiples of 128) that do, and B's residues are made once per
    row block. ``nb`` is the widest such block: a multiple of 256 where it is at least 256,
    else of the padding. Where not even 128 rows against one padded column block fit (tiny
    problems, whose padding alone outgrows 1.5x their inputs), the smallest blocks."""
    pad, cbytes = PAD[gemm], PLANE_BYTES[gemm]
    n_pad = round_up(max(N, 1), pad)
    want = min(n_pad, round_up(ROW_SPLIT_NB, pad))
    parts = 1
    while True:
        mb = M if parts == 1 else round_up(-(-M // parts), 128)
        mbp = _rows_padded(mb, gemm)
        nb = max(0, budget - L * mbp * kp) // (L * kp + cbytes * L * mbp)
        nb = min(nb // 256 * 256 if nb >= 256 else nb // pad * pad, n_pad)
        if nb >= want:
            return mb, nb
        if mb <= 128:
            return mb, max(nb, pad)
        parts += 1


def _blocks(n: int) -> int:
    return max(1, -(-n // _THREADS))


def _col_chunk(rows: int, cols: int) -> int:
    """Rows per thread of the column-statistics kernels: 128, halved (down to 16) while their
    grid (blocks of 256 columns x one chunk) has fewer than 1024 blocks, so that small
    matrices still fill the GPU. Any chunk gives the same integers: the partial maxima and
    sums are combined with integer atomics."""
    chunk = _COL_CHUNK
    while chunk > 16 and _blocks(cols) * -(-rows // chunk) < 1024:
        chunk //= 2
    return chunk


# ------------------------------------------------------------------------ host-side spec


def device_auto_terms(cp: Any, stats_a: DeviceStats, stats_b: DeviceStats, target: str,
                      k: int) -> int:  # fmt: skip
    """``terms="auto"`` with the statistics left on the device: ``oz2_auto_need`` reduces every
    line's smallest acceptable budget to one int (the call's only host copy before the GEMMs:
    4 bytes), then :func:`precision.gemm.ozaki.fewest_moduli`. The same count as
    :func:`precision.gemm.ozaki.auto_terms` on the host copies of the statistics."""
    need = cp.full(1, _NO_LINE, dtype=cp.int32)
    p = np.int32(TARGETS[target][0])
    for st in (stats_a, stats_b):
        n = int(st.emax.size)
        if n:
            _kernel("oz2_auto_need")(
                (_blocks(n),), (_THREADS,),
                (np.int32(n), st.emax, st.esum, st.count, st.nfix, st.bad, p, need),
            )  # fmt: skip
    v = int(need.get()[0])
    return fewest_moduli(None if v == _NO_LINE else v, k)


def _sym(v: int, m: int) -> int:
    r = v % m
    return r - m if r > (m - 1) // 2 else r


def res_constants(moduli: tuple[int, ...]) -> np.ndarray:
    """The kernels' ``ResConst`` per modulus as raw 32-byte records (float32 ``m``,
    ``fl32(1/m)``, int32 ``-m``, float32 ``c[0..3]`` with ``c[p-1]`` the symmetric residue of
    ``2^(14p)`` mod ``m``, then int32 ``c16 - 65536`` with ``c16`` the symmetric residue of
    ``2^16``). The residue
    proofs need every modulus odd in (128, 255] or equal to 256; ValueError otherwise."""
    rec = np.zeros((len(moduli), 8), dtype=np.float32)
    ints = rec.view(np.int32)
    for li, m in enumerate(moduli):
        if not (m == 256 or (m % 2 == 1 and 128 < m <= 255)):
            raise ValueError(f"ozaki2 kernels: modulus {m} must be 256 or odd in (128, 255]")
        rec[li, 0] = m
        rec[li, 1] = np.float32(1.0) / np.float32(m)  # correctly rounded 1/m
        ints[li, 2] = -m
        for p in range(1, 5):
            rec[li, 2 + p] = _sym(1 << (14 * p), m)
        ints[li, 7] = _sym(1 << 16, m) - 65536
    return rec


def crt_parts(moduli: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """The CRT weights ``w_l`` in 40-bit parts for the kernels' fp64 accumulation (float64
    ``(20, 4)``, row ``l`` = bits ``40k .. 40k + 39`` of ``w_l``, exact) and the number of
    parts ``ceil(bit length of M / 40)``, which covers every ``w_l < M``."""
    nparts = -(-math.prod(moduli).bit_length() // 40)
    parts = np.zeros((20, 4), dtype=np.float64)
    for li, w in enumerate(crt_weights(moduli)):
        for k in range(min(nparts, 4)):
            parts[li, k] = float((w >> (40 * k)) & ((1 << 40) - 1))
    return parts, nparts


#: The moduli whose constants each module (by input kind, :data:`IN_FLAGS`) holds.
_CONSTANTS_SET: dict[str, tuple[int, ...]] = {}


def _set_constants(moduli: tuple[int, ...], inp: str = "f64") -> int:
    """Copy ResConst, the CRT weights' limbs, M's limbs and fl(1/M) into the ``__constant__``
    arrays of the module for inputs ``inp`` (skipped when they already hold ``moduli``; each
    module has its own); returns the number of limbs NL. The copies are asynchronous on the
    current stream, so ordered after the kernels already queued there (which may still read
    the old values) and before later ones: no device synchronisation."""
    from precision.gpu import require_gpu

    cp = require_gpu("the Ozaki-II kernels")
    if _CONSTANTS_SET.get(inp) == moduli:
        return crt_limbs(moduli)
    W, _, Ml = crt_constants(moduli)
    inv_m = np.array([float(Fraction(1, math.prod(moduli)))], dtype=np.float64)
    parts, nparts = crt_parts(moduli)
    mod = _module(inp)
    stream = cp.cuda.get_current_stream()
    for name, values in (
        ("c_rc", res_constants(moduli)),
        ("c_W", W.ravel().astype(np.uint32)),
        ("c_Ml", Ml.astype(np.uint32)),
        ("c_invM", inv_m),
        ("c_Wd", parts.ravel()),
        ("c_nparts", np.array([nparts], dtype=np.int32)),
    ):
        host = np.ascontiguousarray(values)
        # host-to-device copies (constant memory is read-only for kernels); pageable host
        # memory is staged before the call returns, so `host` may be freed afterwards
        mod.get_global(name).copy_from_host_async(host.ctypes.data, host.nbytes, stream)
    _CONSTANTS_SET[inp] = moduli
    return int(W.shape[1])


# ------------------------------------------------------------------------- device steps


@dataclass
class DeviceStats:
    """Line statistics on the device (CuPy arrays, one entry per line): ``emax`` int32,
    ``esum`` int64, ``count`` int32, ``nfix`` uint64, ``bad`` int32, ``shift`` int64 (valid
    once a Q2 was applied)."""

    emax: Any
    esum: Any
    count: Any
    nfix: Any
    bad: Any
    shift: Any

    @classmethod
    def empty(cls, cp: Any, n: int, bad: Any = None, zero_shift: bool = True) -> DeviceStats:
        """Arrays for ``n`` lines (uninitialised; ``shift`` zeroed unless ``zero_shift`` is
        False); ``bad``: an int32 device array of ``n`` to use for the flags (a view into a
        buffer shared with other lines)."""
        return cls(
            emax=cp.empty(n, dtype=cp.int32),
            esum=cp.empty(n, dtype=cp.int64),
            count=cp.empty(n, dtype=cp.int32),
            nfix=cp.empty(n, dtype=cp.uint64),
            bad=cp.empty(n, dtype=cp.int32) if bad is None else bad,
            shift=cp.zeros(n, dtype=cp.int64) if zero_shift else cp.empty(n, dtype=cp.int64),
        )

    def lines(self, start: int, stop: int) -> DeviceStats:
        """Views of the statistics of lines ``start .. stop - 1`` (kernels write through them)."""
        return DeviceStats(*(getattr(self, f.name)[start:stop] for f in fields(self)))

    def to_host(self) -> LineStats:
        """The :class:`LineStats` on the host (synchronises; ``nfix`` < 2^57 fits int64)."""
        count = self.count.get().astype(np.int64)
        return LineStats(
            emax=self.emax.get().astype(np.int64),
            esum=self.esum.get().view(np.int64),
            count=count,
            zero=count == 0,
            bad=self.bad.get() != 0,
            nfix=self.nfix.get().astype(np.int64),
        )


def device_line_stats(
    cp: Any, X: Any, axis: int, q2: int | None = None, bad: Any = None
) -> DeviceStats:
    """:class:`DeviceStats` of the rows (``axis=1``) or columns (``axis=0``) of a device
    float64 or float32 matrix (:func:`input_kind`), with the shifts when ``q2`` is given
    (``bad``: as in :meth:`DeviceStats.empty`). Asynchronous (no host copy)."""
    rows, cols = X.shape
    n = rows if axis == 1 else cols
    st = DeviceStats.empty(cp, n, bad, zero_shift=axis == 1)  # columns: oz2_stats_cols_init
    has_q2 = np.int32(q2 is not None)
    q2v = np.int32(q2 if q2 is not None else 0)
    if n == 0:
        return st
    inp = input_kind(X)
    if axis == 1:
        _kernel("oz2_stats_rows", inp)(
            (rows,),
            (_THREADS,),
            (X, np.int32(rows), np.int32(cols), q2v, has_q2, st.emax, st.esum, st.count,
             st.nfix, st.bad, st.shift),
        )  # fmt: skip
        return st
    _kernel("oz2_stats_cols_init")(
        (_blocks(n),), (_THREADS,), (np.int32(n), st.emax, st.esum, st.count, st.nfix, st.bad,
                                     st.shift),
    )  # fmt: skip
    chunk = _col_chunk(rows, cols)
    grid = (_blocks(cols), max(1, -(-rows // chunk)))
    args = (X, np.int32(rows), np.int32(cols), np.int32(chunk))
    _kernel("oz2_stats_cols_max", inp)(grid, (_THREADS,),
                                       (*args, st.emax, st.esum, st.count, st.bad))  # fmt: skip
    _kernel("oz2_stats_cols_nfix", inp)(grid, (_THREADS,), (*args, st.emax, st.nfix))
    apply_shifts(st, q2)
    return st


def apply_shifts(st: DeviceStats, q2: int | None) -> None:
    """Fix ``emax`` of all-zero lines to 0 and, with ``q2``, write the shifts (one kernel)."""
    n = int(st.emax.size)
    if n == 0:
        return
    _kernel("oz2_shifts")(
        (_blocks(n),),
        (_THREADS,),
        (np.int32(n), st.emax, st.count, st.nfix, np.int32(q2 or 0), np.int32(q2 is not None),
         st.shift),
    )  # fmt: skip


def rows_fused(
    cp: Any,
    A: Any,
    q2: int,
    L: int,
    mp: int,
    kp: int,
    out: Any,
    bad: Any = None,
    st: DeviceStats | None = None,
) -> DeviceStats:
    """A's row statistics and shifts for ``q2`` (as :func:`device_line_stats`) *and* the
    residues of :func:`residues_rows` in one kernel that reads A once (``kp <=``
    :data:`ROWS_FUSED_MAX_KP`); returns the statistics, written into ``st`` when given (views
    of a block of rows, :meth:`DeviceStats.lines`), else into new arrays (``bad``: as in
    :meth:`DeviceStats.empty`). Asynchronous."""
    M, K = A.shape
    if kp > ROWS_FUSED_MAX_KP or kp % 4:
        raise ValueError(f"rows_fused: padded K = {kp} must be a multiple of 4 and <= "
                         f"{ROWS_FUSED_MAX_KP}")  # fmt: skip
    if st is None:  # the kernel writes every row's statistics, shift included
        st = DeviceStats.empty(cp, M, bad, zero_shift=False)
    if mp == 0:
        return st
    _kernel("oz2_rows_fused", input_kind(A))(
        (mp,),
        (_ROWS_FUSED_THREADS,),
        (A, np.int32(M), np.int32(K), np.int32(mp), np.int32(kp), np.int32(q2), st.emax,
         st.esum, st.count, st.nfix, st.bad, st.shift, np.int32(L), out),
        shared_mem=8 * kp,
    )  # fmt: skip
    return st


def residues_rows(cp: Any, A: Any, shift: Any, L: int, mp: int, kp: int, out: Any) -> None:
    """``out[l][i][k]`` (int8, ``L x mp x kp``) = symmetric residue of ``rint(A[i,k]·2^s_i)``
    modulo ``m_l`` (zero padding); the moduli are those of the last constants set."""
    M, K = A.shape
    _kernel("oz2_residues_rows", input_kind(A))(
        (_blocks(mp * kp // 4),),
        (_THREADS,),
        (A, np.int32(M), np.int32(K), np.int32(mp), np.int32(kp), shift, np.int32(L), out),
    )


def residues_cols(
    cp: Any, B: Any, shift: Any, L: int, c0: int, nb: int, nbp: int, kp: int, out: Any
) -> None:
    """``out[l][j][k]`` (int8, ``L x nbp x kp``: B's columns ``c0..c0+nb-1`` transposed) =
    symmetric residue of ``rint(B[k, c0+j]·2^t_(c0+j))`` modulo ``m_l`` (zero padding)."""
    K, N = B.shape
    _kernel("oz2_residues_cols", input_kind(B))(
        (-(-nbp // 32), -(-kp // 128)),
        (_THREADS,),
        (B, np.int32(K), np.int32(N), np.int32(c0), np.int32(nb), np.int32(kp), np.int32(nbp),
         shift, np.int32(L), out),
    )  # fmt: skip


def write_specials(cp: Any, D: Any, A: Any, B: Any, bad_all: Any, emax_a: Any, emax_b: Any,
                   target: str) -> None:  # fmt: skip
    """Overwrite, on the device, the outputs of ``D`` (M x N, C-contiguous) in rows of A or
    columns of B that hold NaN or ±Inf (``bad_all``: the int32 flags of A's rows, then B's
    columns) with the IEEE value native GEMM gives there, the value of
    :func:`~precision.gemm.ozaki.special_block` (``oz2_specials_f64`` / ``_f32`` in
    precision/kernels/ozaki2.cu). ``emax_a`` / ``emax_b`` (int32): the frexp exponents of
    each line's largest finite magnitude, or less (as :class:`DeviceStats` holds them): where
    they show that no finite product can overflow, only the NaN/Inf entries' products are
    visited. No host synchronisation: with no bad line the kernel only reads the flags. A and
    B are the arrays the other kernels read (:func:`device_inputs`)."""
    M, K = A.shape
    N = B.shape[1]
    if D.size == 0:
        return
    suffix = "f64" if target == "fp64" else "f32"
    _kernel(f"oz2_specials_{suffix}", input_kind(A))(
        (_blocks(N) * -(-M // SPECIAL_ROWS),),
        (_THREADS,),
        (A, B, np.int32(M), np.int32(N), np.int32(K), bad_all, emax_a, emax_b, D),
    )


class PhaseTimer:
    """CUDA events between the phases of one call, when ``enabled``: ``timer(name)`` records
    the end of phase ``name`` (the first call marks the start); :meth:`totals` waits for the
    last event and returns device milliseconds summed per name (empty when disabled). No
    synchronisation before that."""

    def __init__(self, cp: Any, enabled: bool) -> None:
        self.cp = cp
        self.enabled = enabled
        self.events: list[tuple[str, Any]] = []

    def __call__(self, name: str) -> None:
        if self.enabled:
            ev = self.cp.cuda.Event()
            ev.record()
            self.events.append((name, ev))

    def totals(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if not self.events:
            return out
        self.events[-1][1].synchronize()
        for (_, e0), (name, e1) in zip(self.events[:-1], self.events[1:], strict=True):
            out[name] = out.get(name, 0.0) + self.cp.cuda.get_elapsed_time(e0, e1)
        return out


@dataclass
class CudaRun:
    """What one call did: the plan (moduli, target), ``q2``, the GEMM path, the row and
    column blocks (:func:`cuda_blocks`), workspace bytes and, when timed, the device
    milliseconds of each phase (``stats``, ``split`` (residues; with an int ``terms`` also A's
    row statistics, fused with them), ``gemm``, ``reconstruct``, ``specials``)."""

    plan: OzakiPlan
    q2: int = 0
    gemm: str = "cublas"
    mb: int = 0
    nb: int = 0
    workspace_bytes: int = 0
    phase_ms: dict[str, float] = field(default_factory=dict)


def resolve_gemm(cp: Any, gemm: str) -> str:
    """``gemm="auto"``: the fused modular INT8 GEMM (precision/kernels/ozaki2_gemm.cu, built
    for sm_90a, which runs on compute capability 9.0 only: H100/H200) where the device is
    one, else cuBLAS. Both give the same bits."""
    if gemm == "auto":
        return "fused" if cp.cuda.Device().compute_capability == "90" else "cublas"
    if gemm not in PAD:
        raise ValueError(
            f"ozaki2 backend='cuda': gemm must be 'auto' or one of {GEMMS}, got {gemm!r}"
        )
    return gemm


def ozaki2_cuda(
    A: Any,
    B: Any,
    *,
    target: str = "fp64",
    terms: int | str = "auto",
    workspace_factor: float = 1.5,
    timed: bool = False,
    gemm: str = "auto",
) -> tuple[Any, CudaRun]:
    """Scheme II on the GPU for device or host float64/float32 arrays (two float32 operands are
    read as float32, no float64 copy: :func:`device_inputs`); returns (D as a CuPy array of
    ``target``'s dtype, :class:`CudaRun`). ``gemm``: ``"cublas"`` (int32 planes),
    ``"fused"`` (int8 residue planes from our fused modular GEMM, sm_90a) or ``"auto"``
    (:func:`resolve_gemm`). ``timed`` records CUDA events per phase (no extra
    synchronisation before the end)."""
    from precision.gemm.ozaki_gemm_launch import gemm_mod as fused_gemm
    from precision.gpu import require_gpu

    cp = require_gpu("ozaki2 backend='cuda'")
    check_args("ozaki2", "int8", target)
    gemm = resolve_gemm(cp, gemm)
    gemm_mod = fused_gemm if gemm == "fused" else None
    A, B = device_inputs(cp, A, B)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"A (M x K) and B (K x N) must agree: got {A.shape} and {B.shape}")
    M, K = A.shape
    N = B.shape[1]
    inp = input_kind(A)  # the module of every kernel below that reads A, B or the constants
    if K > INT8_KMAX:
        raise ValueError(
            f"ozaki2 backend='cuda': K = {K} > {INT8_KMAX}, the largest K whose int8 residue "
            "products are exact in int32; blocking over K is not implemented on the GPU"
        )
    if terms != "auto" and not (
        isinstance(terms, int | np.integer) and not isinstance(terms, bool)
    ):
        raise ValueError(f"terms must be a positive int or 'auto', got {terms!r}")
    mark = PhaseTimer(cp, timed)

    def prepare(n_terms: int) -> tuple[OzakiPlan, int, int]:
        plan = make_plan("ozaki2", "int8", target, n_terms, K)
        q2 = plan.q2
        nl = _set_constants(plan.moduli, inp)
        if nl not in (2, 3, 4, 5):
            raise ValueError(f"ozaki2 backend='cuda': {nl} limbs are not compiled (2..5)")
        return plan, q2, nl

    pad = PAD[gemm]
    kp = round_up(K, pad)
    # A fixed `terms` fixes q2 before the statistics, so A's rows need one kernel and one read
    fuse_rows = terms != "auto" and kp <= ROWS_FUSED_MAX_KP
    # the bad-line flags of A's rows and B's columns in one buffer: one reduction at the end
    bad_all = cp.empty(M + N, dtype=cp.int32)
    bad_a, bad_b = bad_all[:M], bad_all[M:]
    mark("start")
    if terms == "auto":
        dsa = device_line_stats(cp, A, 1, bad=bad_a)
        dsb = device_line_stats(cp, B, 0, bad=bad_b)
        plan, q2, nl = prepare(device_auto_terms(cp, dsa, dsb, target, K))
        apply_shifts(dsa, q2)
        apply_shifts(dsb, q2)
    else:
        plan, q2, nl = prepare(int(terms))  # errors before any launch; no sync
    L = plan.terms
    budget = max(int(workspace_factor * input_bytes(A, B)), int(OUTPUT_SHARE * 8 * M * N))
    mb, nb = cuda_blocks(M, N, kp, L, gemm, budget)
    mbp_max = _rows_padded(mb, gemm)
    ares = cp.empty((L, mbp_max, kp), dtype=cp.int8)
    bres = cp.empty((L, nb, kp), dtype=cp.int8)
    C = cp.empty((L, mbp_max, nb), dtype=cp.int32 if gemm == "cublas" else cp.int8)
    p, emin_sub, dtype = TARGETS[plan.target]
    D = cp.empty((M, N), dtype=dtype)
    suffix = "f64" if plan.target == "fp64" else "f32"
    recon = _kernel(f"oz2_recon_{'i32' if gemm == 'cublas' else 'i8'}_nl{nl}_{suffix}", inp)
    if fuse_rows:  # A's statistics come block by block with its residues
        dsa = DeviceStats.empty(cp, M, bad_a, zero_shift=False)
    else:
        if terms != "auto":
            dsa = device_line_stats(cp, A, 1, q2, bad_a)
            dsb = device_line_stats(cp, B, 0, q2, bad_b)
        mark("stats")
    # Blocks of mb rows of A (one, unless A's residues alone would outgrow the budget), each
    # against B in blocks of nb columns; every view below starts on a 16-byte boundary (mb is
    # M or a multiple of 128).
    views: dict[tuple[int, tuple[int, ...]], Any] = {}

    def prefix(buf: Any, shape: tuple[int, ...]) -> Any:
        """The leading elements of ``buf`` as an array of ``shape`` (a view, made once per
        shape: CuPy views cost host time, and only the last blocks differ)."""
        key = (id(buf), shape)
        if key not in views:
            views[key] = buf.reshape(-1)[: math.prod(shape)].reshape(shape)
        return views[key]

    for r0 in range(0, M, mb) if M else [0]:
        mbc = min(mb, M - r0)
        mbp = _rows_padded(mbc, gemm)
        ablk = prefix(ares, (L, mbp, kp))
        shift_a, d_rows = dsa.shift[r0 : r0 + mbc], D[r0 : r0 + mbc]
        if fuse_rows:
            rows_fused(cp, A[r0 : r0 + mbc], q2, L, mbp, kp, ablk, st=dsa.lines(r0, r0 + mbc))
            mark("split")
            if r0 == 0:  # (the long row kernel first: the host queues the short ones behind it)
                dsb = device_line_stats(cp, B, 0, q2, bad_b)
                mark("stats")
        else:
            residues_rows(cp, A[r0 : r0 + mbc], shift_a, L, mbp, kp, ablk)
            mark("split")
        for c0 in range(0, N, nb):
            nbc = min(nb, N - c0)
            nbp = round_up(nbc, pad)
            bblk = prefix(bres, (L, nbp, kp))
            residues_cols(cp, B, dsb.shift, L, c0, nbc, nbp, kp, bblk)
            mark("split")
            cblk = prefix(C, (L, mbp, nbp))
            if gemm_mod is None:
                from precision.vendor.cublas import int8_gemm_strided_batched

                int8_gemm_strided_batched(cp, bblk, ablk, cblk, mbc, nbp, kp, L)
            else:
                gemm_mod(cp, ablk, bblk, cblk, mbp, nbp, kp, L, plan.moduli)
            mark("gemm")
            recon(
                (_blocks(mbc * (nbp // 4)),),
                (_THREADS,),
                (cblk, np.int32(mbc), np.int32(mbp), np.int32(nbc), np.int32(nbp), np.int32(L),
                 shift_a, dsb.shift, np.int32(c0), np.int32(N), np.int32(p),
                 np.int32(emin_sub), d_rows),
            )  # fmt: skip
            mark("reconstruct")
    write_specials(cp, D, A, B, bad_all, dsa.emax, dsb.emax, plan.target)
    mark("specials")
    run = CudaRun(
        plan=plan,
        q2=q2,
        gemm=gemm,
        mb=mb,
        nb=nb,
        workspace_bytes=int(ares.nbytes + bres.nbytes + C.nbytes),
    )
    run.phase_ms = mark.totals()
    return D, run


def ozaki_gemm_cuda(A: Any, B: Any, *, method: str, fmt: str, target: str, terms: int | str) -> Any:
    """Entry point of ``gemm(..., backend="cuda")`` for the Ozaki methods (a CuPy array)."""
    check_args(method, fmt, target)
    if method == "ozaki1":
        from precision.gemm.ozaki1_cuda import ozaki1_cuda

        return ozaki1_cuda(A, B, fmt=fmt, target=target, terms=terms)[0]
    D, _ = ozaki2_cuda(A, B, target=target, terms=terms)
    return D
