"""One spec per GEMM kernel: its source, entry point, tile, threads, shared memory and the
build constants that change its numerics. The one place that holds the kernels' geometry.

Read by the launcher (:mod:`precision.kernels.launch`) and by the schedules
(:mod:`precision.gemm.schedule`), so neither parses kernel names nor imports the other. Every
number here mirrors a constant in the CUDA source (``gemm_mma.cu``, ``gemm_wgmma.cu``);
``tests/kernels/test_specs.py`` reads the sources and checks that they agree.

Formats are spelled as in the kernel names: ``f16``, ``bf16``, ``tf32``, ``e4m3``, ``e5m2``,
``int8``. Shared memory is in bytes, tiles are (BM, BN, BK) in elements: the host zero-pads
M, N, K to multiples of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from precision.formats import get_format

MMA_SOURCE = "gemm_mma.cu"
WGMMA_SOURCE = "gemm_wgmma.cu"

# ---- gemm_mma.cu (mma.sync, sm_90) ----------------------------------------------------------
#: CTA tile, cp.async pipeline stages and threads of every gemm_mma.cu kernel (BM, BN, BK,
#: STAGES, NTHREADS there).
MMA_TILE: tuple[int, int, int] = (128, 128, 32)
MMA_STAGES, MMA_THREADS = 3, 256
_BM, _BN, _BK = MMA_TILE
#: fp8/int8 kernels (register conversion path): STAGES fp32 stages of A [BM][BK+4] and
#: B [BK][BN+8] (LDA, LDB there).
MMA_REG_SMEM = MMA_STAGES * (_BM * (_BK + 4) + _BK * (_BN + 8)) * 4
#: f16/bf16/tf32 satf kernels (converted-tile path, ``gemm_body_cvt``): CVT_STAGES fp32 staging
#: stages of A [BM][BK+4] and B [BK][BN+4], plus two buffers of operand tiles: 16-bit
#: A [BM][BK+8] + B [BK][BN+8], or tf32 A [BM][BK+4] + B^T [BN][BK+4] (CVT_STAGES, CSTAGE,
#: H_*, T_* there).
MMA_CVT_STAGES = 2
_CSTAGE_BYTES = (_BM * (_BK + 4) + _BK * (_BN + 4)) * 4
#: Bytes of one operand element in shared memory per kernel format: the registry's container
#: (tf32 in fp32's 4 bytes).
_ELEM_BYTES = {
    k: get_format(k).container_bits // 8 for k in ("f16", "bf16", "tf32", "e4m3", "e5m2", "int8")
}
_CVT_PART_BYTES = {
    "f16": (_BM * (_BK + 8) + _BK * (_BN + 8)) * _ELEM_BYTES["f16"],
    "bf16": (_BM * (_BK + 8) + _BK * (_BN + 8)) * _ELEM_BYTES["bf16"],
    "tf32": (_BM * (_BK + 4) + _BN * (_BK + 4)) * _ELEM_BYTES["tf32"],
}

# ---- gemm_wgmma.cu (wgmma, sm_90a) ----------------------------------------------------------
#: Formats of the wgmma kernels.
WGMMA_FORMATS: tuple[str, ...] = ("f16", "bf16", "tf32")
#: plain/satf: 128 x 256 CTA tiles, k-stages of 128 bytes per row, 4 cp.async stages, 256
#: threads; +1 KiB for the 1024-byte alignment of the operand tiles.
WG_PLAIN_ROW, WG_PLAIN_STAGES, WG_PLAIN_THREADS = 128, 4, 256
#: split (ootomo/markidis): 128 x 128 tiles, k-stages of 64 bytes per row (SPLIT_ROW), 512
#: threads (two producer and two consumer warpgroups) and a ring of slots per format.
WG_SPLIT_ROW, WG_SPLIT_THREADS = 64, 512
#: ring slots per format (the WG_SPLIT_SLOTS16 / WG_SPLIT_SLOTS32 defaults); a tuning knob.
WG_SPLIT_SLOTS: dict[str, int] = {"f16": 4, "bf16": 4, "tf32": 6}
#: k-stages per Ootomo k-block (WG_SPLIT_TBLOCK16 / WG_SPLIT_TBLOCK32): part of the numerics,
#: t = hi*hi is chained inside the tensor core over the whole k-block before its fp32 add.
WG_SPLIT_TBLOCK: dict[str, int] = {"f16": 4, "bf16": 4, "tf32": 2}
#: columns of A per TMA box and the box's shared-memory swizzle span (SplitCfg A_BOX_K and the
#: A staging layout): f16/bf16 8 columns (32-byte rows), tf32 16 (64-byte rows, 64-byte swizzle)
WG_A_BOX: dict[str, tuple[int, int]] = {"f16": (8, 0), "bf16": (8, 0), "tf32": (16, 64)}


def split_stage_k(fmt: str) -> int:
    """k of one k-stage of the split (corrected) wgmma kernels on ``fmt`` (kernel spelling):
    operand rows of 64 bytes, 32 k for f16/bf16 and 16 for tf32 (SplitCfg::KS)."""
    return WG_SPLIT_ROW // _ELEM_BYTES[fmt]


def ootomo_block_k(fmt: str) -> int:
    """k of one Ootomo k-block of the split kernels on ``fmt``: 128 for f16/bf16, 32 for tf32."""
    return WG_SPLIT_TBLOCK[fmt] * split_stage_k(fmt)


def split_smem_bytes(fmt: str, slots: int) -> int:
    """Dynamic shared memory of a split kernel on ``fmt`` with a ring of ``slots`` slots, two
    8-byte mbarriers per slot and 1 KiB for the 1024-byte alignment. A slot: the B_hi and B_lo
    tiles (``bn`` rows of 64 bytes each) and the fp32 staging tiles of A (``bm`` x ``ks``) and
    B (``ks`` x ``bn``), ``ks`` = :func:`split_stage_k`."""
    bm, bn = 128, 128
    ks = split_stage_k(fmt)
    slot = 2 * bn * WG_SPLIT_ROW + (bm * ks + ks * bn) * 4
    return slots * (slot + 16) + 1024


@dataclass(frozen=True)
class KernelSpec:
    """One CUDA entry point.

    ``mode``: plain / satf / satfstrict / ootomo / markidis, or round_operands (the wgmma
    plain/satf operand rounding, which has no tile). ``arch``: the nvcc target of its
    cubin. ``threads``: threads per block. ``smem_bytes``: the dynamic shared memory it is
    launched with (0: static only). ``defines``: the ``-D`` constants of its source that change
    its numerics, with the defaults compiled in (the cubin is built without them).
    """

    name: str
    source: str
    arch: str
    mode: str
    fmt: str
    tile: tuple[int, int, int] | None
    threads: int
    smem_bytes: int
    defines: tuple[tuple[str, int], ...] = ()

    @property
    def gemm_tile(self) -> tuple[int, int, int]:
        """(BM, BN, BK) of a GEMM kernel (ValueError for the rounding kernels)."""
        if self.tile is None:
            raise ValueError(f"kernel {self.name!r} ({self.mode}) is not a GEMM kernel")
        return self.tile


def _mma_spec(mode: str, fmt: str) -> KernelSpec:
    smem = (
        MMA_CVT_STAGES * _CSTAGE_BYTES + 2 * _CVT_PART_BYTES[fmt]
        if fmt in _CVT_PART_BYTES
        else MMA_REG_SMEM
    )
    return KernelSpec(
        f"gemm_{mode}_{fmt}", MMA_SOURCE, "sm_90", mode, fmt, MMA_TILE, MMA_THREADS, smem
    )


def _wg_spec(mode: str, fmt: str) -> KernelSpec:
    if mode == "round_operands":
        return KernelSpec(f"wg_{mode}_{fmt}", WGMMA_SOURCE, "sm_90a", mode, fmt, None, 256, 0)
    if mode in ("plain", "satf"):
        tile = (128, 256, WG_PLAIN_ROW // _ELEM_BYTES[fmt])
        smem = WG_PLAIN_STAGES * (tile[0] + tile[1]) * WG_PLAIN_ROW + 1024
        return KernelSpec(
            f"wg_{mode}_{fmt}", WGMMA_SOURCE, "sm_90a", mode, fmt, tile, WG_PLAIN_THREADS, smem
        )
    macro = "WG_SPLIT_TBLOCK32" if fmt == "tf32" else "WG_SPLIT_TBLOCK16"
    return KernelSpec(
        f"wg_{mode}_{fmt}",
        WGMMA_SOURCE,
        "sm_90a",
        mode,
        fmt,
        (128, 128, ootomo_block_k(fmt)),  # K padded to whole Ootomo k-blocks, Markidis too
        WG_SPLIT_THREADS,
        split_smem_bytes(fmt, WG_SPLIT_SLOTS[fmt]),
        ((macro, WG_SPLIT_TBLOCK[fmt]),),
    )


def _all_specs() -> dict[str, KernelSpec]:
    specs = [_mma_spec("plain", f) for f in ("e4m3", "e5m2", "int8")]
    specs += [_mma_spec("satf", f) for f in ("f16", "bf16", "tf32", "e4m3", "e5m2", "int8")]
    specs += [_mma_spec("satfstrict", f) for f in ("f16", "bf16", "tf32", "e4m3", "e5m2")]
    modes = ("round_operands", "plain", "satf", "ootomo", "markidis")
    specs += [_wg_spec(m, f) for m in modes for f in WGMMA_FORMATS]
    return {s.name: s for s in specs}


#: Every kernel entry point of gemm_mma.cu and gemm_wgmma.cu, by name.
KERNELS: dict[str, KernelSpec] = _all_specs()


def kernel_spec(name: str) -> KernelSpec:
    """The spec of kernel ``name`` (ValueError listing the known kernels if unknown)."""
    try:
        return KERNELS[name]
    except KeyError:
        raise ValueError(f"unknown GEMM kernel {name!r}; known: {sorted(KERNELS)}") from None
