"""Register fragment layouts of warp-level ``mma.sync`` instructions, as data.

A warp of 32 lanes holds each operand of an ``mma.sync`` in registers: lane ``l`` holds
``regs`` registers of ``reg_bits`` bits, each packing ``per_reg`` elements of ``elem_bits``
bits (element ``j`` of a register in bits ``j*elem_bits ..``, lowest first). A
:class:`Fragment` says which matrix element (row, col) each (lane, element) holds; the probe
kernels pack and unpack operands with it, so a wrong layout shows up at once in the
small-integer probes on hardware (every output there is an exact integer sum).

The layouts follow the PTX ISA's "Matrix fragments for mma.m16n8k*" / "mma.m8n8k*" sections,
written here in one closed form per shape family (g = lane >> 2, t = lane & 3,
e = elements per register, i = element index within the lane, r = i // e):

- ``m16n8kK`` A (16 x K): row = g + 8 (r mod 2), col = t e + (i mod e) + 4 e floor(r / 2).
- ``m16n8kK`` B (K x 8):  k = t e + (i mod e) + 4 e r,  n = g.
- ``m16n8`` C/D (16 x 8): element i in 0..3: row = g + 8 floor(i / 2), col = 2 t + (i mod 2).
- ``m8n8kK`` A (8 x K):   row = g, col = t e + i;  B: k = t e + i, n = g.
- ``m8n8`` C/D (8 x 8):   element i in 0..1: row = g, col = 2 t + i.

``e`` is ``32 / elem_bits`` for 32-bit registers (f16/bf16: 2, 8-bit: 4, 4-bit: 8, 1-bit: 32,
tf32/f32/s32: 1) and 1 for f64 (one element per 64-bit register).

Volta's f16 ``mma.sync.m8n8k4`` (:func:`quadpair_fragments`; PTX ISA "Matrix fragments for
mma.m8n8k4 with .f16 floating point type", the same as CUTLASS/CuTe's SM70 traits) is not of
this form: the warp runs four independent 8x8x4 products, one per *quad pair* ``q``, lanes
``4q..4q+3`` and ``4q+16..4q+19``. With q = (lane >> 2) & 3, h = lane >> 4 (0 for the lower
quad, 1 for the upper), u = lane & 3, and the four products stacked (A ``[32, 4]`` and C/D
``[32, 8]`` by rows, B ``[4, 32]`` by columns, quad pair q owning rows / columns 8q..8q+7):

- A (.row, 4 f16 per lane): row = 8q + u + 4h, col = i.
- B (.col, 4 f16 per lane): k = i, n = 8q + u + 4h.
- C/D f16 (8 per lane):     row = 8q + u + 4h, col = i.
- C/D f32 (8 per lane):     row = 8q + (lane & 1) + (i & 2) + 4h,
                            col = (i & 4) + (lane & 2) + (i & 1).

Quad pair q computes D[8q:8q+8, :] = A[8q:8q+8, :] · B[:, 8q:8q+8] + C[8q:8q+8, :]. This
layout is transcribed from the PTX ISA and has not been run on hardware. A V100 (sm_70, which
nvcc 13 no longer targets) or a T4 (sm_75, which executes m8n8k4 with the same PTX layout)
can check it, with the small-integer-style probes that check the other layouts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Fragment", "mma_fragments", "pack", "quadpair_fragments", "unpack"]

WARP = 32


@dataclass(frozen=True)
class Fragment:
    """Which element of a ``rows x cols`` operand each lane's registers hold.

    Attributes:
        rows, cols: operand shape (A: M x K, B: K x N, C/D: M x N).
        elem_bits: bits per element (1, 4, 8, 16, 32 or 64).
        reg_bits: register width (32, or 64 for f64 operands).
        row, col: int arrays ``[32, n]``: lane ``l``'s element ``i`` is operand[row, col].
    """

    rows: int
    cols: int
    elem_bits: int
    reg_bits: int
    row: np.ndarray
    col: np.ndarray

    @property
    def per_reg(self) -> int:
        """Elements packed into one register."""
        return self.reg_bits // self.elem_bits

    @property
    def elements(self) -> int:
        """Elements per lane."""
        return int(self.row.shape[1])

    @property
    def regs(self) -> int:
        """Registers per lane."""
        return self.elements // self.per_reg

    @property
    def words(self) -> int:
        """32-bit words per lane (a 64-bit register is two words, low word first)."""
        return self.regs * self.reg_bits // 32


def _lanes() -> tuple[np.ndarray, np.ndarray]:
    lane = np.arange(WARP)[:, None]
    return lane >> 2, lane & 3


def _frag(rows: int, cols: int, elem_bits: int, row: np.ndarray, col: np.ndarray) -> Fragment:
    reg_bits = 64 if elem_bits == 64 else 32
    row, col = np.broadcast_arrays(row, col)
    return Fragment(rows, cols, elem_bits, reg_bits, row.astype(np.int64), col.astype(np.int64))


def mma_fragments(
    shape: tuple[int, int, int], in_bits: int, acc_bits: int
) -> tuple[Fragment, Fragment, Fragment]:
    """The A, B and C/D fragments of ``mma.sync.m{M}n{N}k{K}`` with ``in_bits``-bit inputs
    and an ``acc_bits``-bit accumulator (16 for f16, 32 for f32/s32, 64 for f64).

    Raises:
        ValueError: the shape is not one of the ``m16n8kK`` / ``m8n8kK`` families, or K does
            not fill whole registers.
    """
    m, n, k = shape
    g, t = _lanes()
    e_in = 1 if in_bits == 64 else 32 // in_bits
    if n != 8 or m not in (8, 16):
        raise ValueError(f"shape m{m}n{n}k{k}: only m16n8kK and m8n8kK layouts are described")
    if (m, k, in_bits) == (8, 4, 16):
        raise ValueError(
            "shape m8n8k4 with f16 inputs is Volta's quad-pair layout (four stacked 8x8x4 "
            "products): use quadpair_fragments"
        )
    per_lane_a = m * k // WARP
    per_lane_b = k * n // WARP
    if per_lane_a % e_in or per_lane_b % e_in or per_lane_a == 0 or per_lane_b == 0:
        raise ValueError(f"shape m{m}n{n}k{k} with {in_bits}-bit inputs: K fills no whole register")
    ia = np.arange(per_lane_a)[None, :]
    ib = np.arange(per_lane_b)[None, :]
    if m == 16:
        ra = ia // e_in
        a = _frag(m, k, in_bits, g + 8 * (ra % 2), t * e_in + ia % e_in + 4 * e_in * (ra // 2))
        rb = ib // e_in
        b = _frag(k, n, in_bits, t * e_in + ib % e_in + 4 * e_in * rb, g)
        ic = np.arange(4)[None, :]
        c = _frag(m, n, acc_bits, g + 8 * (ic // 2), 2 * t + ic % 2)
    else:
        a = _frag(m, k, in_bits, g, t * e_in + ia)
        b = _frag(k, n, in_bits, t * e_in + ib, g)
        ic = np.arange(2)[None, :]
        c = _frag(m, n, acc_bits, g, 2 * t + ic)
    return a, b, c


def quadpair_fragments(acc_bits: int) -> tuple[Fragment, Fragment, Fragment]:
    """The A, B and C/D fragments of Volta's ``mma.sync.aligned.m8n8k4.row.col`` with f16
    inputs and an ``acc_bits``-bit accumulator (16: f16, 32: f32), for the four quad-pair
    products stacked: A ``[32, 4]``, B ``[4, 32]``, C/D ``[32, 8]`` (see the module docstring).

    Raises:
        ValueError: ``acc_bits`` is not 16 or 32.
    """
    if acc_bits not in (16, 32):
        raise ValueError(f"m8n8k4 accumulator: expected 16 or 32 bits, got {acc_bits}")
    lane = np.arange(WARP)[:, None]
    base = 8 * ((lane >> 2) & 3) + 4 * (lane >> 4)  # first row (or column) of this lane's quad
    i4, i8 = np.arange(4)[None, :], np.arange(8)[None, :]
    a = _frag(32, 4, 16, base + (lane & 3), i4)
    b = _frag(4, 32, 16, i4, base + (lane & 3))
    if acc_bits == 16:
        c = _frag(32, 8, 16, base + (lane & 3), i8)
    else:
        c = _frag(32, 8, 32, base + (lane & 1) + (i8 & 2), (i8 & 4) + (lane & 2) + (i8 & 1))
    return a, b, c


def pack(tiles: np.ndarray, frag: Fragment) -> np.ndarray:
    """Pack operand tiles into per-lane register words.

    Args:
        tiles: unsigned bit patterns ``[..., rows, cols]`` (each element's low ``elem_bits``
            bits are used; sub-byte elements one per array element).
        frag: the operand's fragment.

    Returns:
        uint32 ``[..., 32, frag.words]``: the words each lane loads, in register order (a 64-bit
        register as its low word, then its high word).
    """
    if tiles.shape[-2:] != (frag.rows, frag.cols):
        raise ValueError(f"tiles: expected [..., {frag.rows}, {frag.cols}], got {tiles.shape}")
    elems = tiles[..., frag.row, frag.col].astype(np.uint64)  # [..., 32, elements]
    mask = np.uint64((1 << frag.elem_bits) - 1) if frag.elem_bits < 64 else ~np.uint64(0)
    elems &= mask
    lead = elems.shape[:-1]
    per = elems.reshape(*lead, frag.regs, frag.per_reg)
    shifts = (np.arange(frag.per_reg, dtype=np.uint64) * np.uint64(frag.elem_bits)) % np.uint64(64)
    regs = np.bitwise_or.reduce(per << shifts, axis=-1)  # [..., 32, regs] as uint64
    if frag.reg_bits == 32:
        words = regs
    else:
        words = np.stack([regs & np.uint64(0xFFFFFFFF), regs >> np.uint64(32)], axis=-1)
    # C order, always: the reduction can return other strides (with one register per lane
    # even a Fortran-contiguous array, which CuPy copies to the device as it is), and the
    # kernels index the words as [..., lane, word].
    return np.ascontiguousarray(words.reshape(*lead, frag.words), dtype=np.uint32)


def unpack(words: np.ndarray, frag: Fragment, dtype: np.dtype | type = np.uint32) -> np.ndarray:
    """Inverse of :func:`pack`: ``[..., 32, frag.words]`` uint32 -> ``[..., rows, cols]``."""
    w = np.asarray(words).astype(np.uint64)
    if w.shape[-2:] != (WARP, frag.words):
        raise ValueError(f"words: expected [..., 32, {frag.words}], got {w.shape}")
    lead = w.shape[:-2]
    if frag.reg_bits == 64:
        pairs = w.reshape(*lead, WARP, frag.regs, 2)
        regs = pairs[..., 0] | (pairs[..., 1] << np.uint64(32))
    else:
        regs = w
    shifts = np.arange(frag.per_reg, dtype=np.uint64) * np.uint64(frag.elem_bits)
    mask = np.uint64((1 << frag.elem_bits) - 1) if frag.elem_bits < 64 else ~np.uint64(0)
    elems = ((regs[..., None] >> shifts) & mask).reshape(*lead, WARP, frag.elements)
    out = np.zeros((*lead, frag.rows, frag.cols), dtype=np.uint64)
    out[..., frag.row, frag.col] = elems
    return out.astype(dtype)
