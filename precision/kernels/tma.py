"""Tensor maps (``CUtensorMap``) for the TMA loads of the split GEMM kernels.

The CUDA driver encodes them (``cuTensorMapEncodeTiled``, called through ctypes: CuPy does not
wrap it); the kernels read the 128-byte descriptors from device memory. Nothing here is
imported by the CPU path.
"""

from __future__ import annotations

import ctypes
import functools

#: CUtensorMapSwizzle for a shared-memory swizzle span in bytes (0 = none)
_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
_FLOAT32 = 7  # CU_TENSOR_MAP_DATA_TYPE_FLOAT32
_L2_PROMOTION_128B = 2
TENSOR_MAP_BYTES = 128


@functools.cache
def _encode_tiled():  # noqa: ANN202 - a ctypes function
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:  # pragma: no cover - only without a driver
        raise RuntimeError(f"the CUDA driver library libcuda.so.1 is not loadable: {exc}") from exc
    u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
    fn = lib.cuTensorMapEncodeTiled
    fn.restype = ctypes.c_int
    fn.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_uint32,
        ctypes.c_void_p,
        u64p,
        u64p,
        u32p,
        u32p,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
    ]
    return fn


def _encode(
    dtype: int, dims: tuple[int, ...], pitches: tuple[int, ...], box: tuple[int, ...],
    address: int, swizzle: int, what: str,
) -> bytes:  # fmt: skip
    """``cuTensorMapEncodeTiled`` of a tiled map (element strides 1, no interleave, L2
    promotion 128 B, no out-of-bounds NaN fill); ``dims`` and ``box`` innermost first,
    ``pitches`` the byte strides of dimensions 1.. ; ``what`` names the tensor in errors."""
    rank = len(dims)
    buf = ctypes.create_string_buffer(TENSOR_MAP_BYTES + 64)  # the map is 64-byte aligned
    start = ctypes.addressof(buf) + (-ctypes.addressof(buf)) % 64
    rc = _encode_tiled()(
        start,
        dtype,
        rank,
        address,
        (ctypes.c_uint64 * rank)(*dims),
        (ctypes.c_uint64 * (rank - 1))(*pitches),
        (ctypes.c_uint32 * rank)(*box),
        (ctypes.c_uint32 * rank)(*([1] * rank)),
        0,
        _SWIZZLE[swizzle],
        _L2_PROMOTION_128B,
        0,
    )
    if rc != 0:
        raise RuntimeError(
            f"cuTensorMapEncodeTiled failed (CUresult {rc}) for {what}, swizzle {swizzle} B"
        )
    return ctypes.string_at(start, TENSOR_MAP_BYTES)


def fp32_matrix_map(
    address: int, rows: int, cols: int, box_rows: int, box_cols: int, swizzle: int = 0
) -> bytes:
    """The tensor map of a row-major, C-contiguous fp32 matrix (``rows`` x ``cols`` at device
    ``address``) read in boxes of ``box_rows`` x ``box_cols`` elements. A box lands in shared
    memory as ``box_rows`` dense rows of ``4 * box_cols`` bytes, with the 16-byte chunks of
    each row permuted by the TMA ``swizzle`` span (0, 32, 64 or 128 bytes)."""
    if address % 16 or (cols * 4) % 16:
        raise ValueError(
            f"TMA needs a 16-byte aligned matrix and row pitch: address "
            f"0x{address:x}, {cols} fp32 columns"
        )
    what = f"a {rows} x {cols} fp32 matrix, box {box_rows} x {box_cols}"
    return _encode(_FLOAT32, (cols, rows), (cols * 4,), (box_cols, box_rows), address, swizzle,
                   what)  # fmt: skip


_UINT8 = 0  # CU_TENSOR_MAP_DATA_TYPE_UINT8


def int8_batched_map(
    address: int,
    count: int,
    rows: int,
    cols: int,
    stride: int,
    box_rows: int,
    box_cols: int,
    swizzle: int = 0,
) -> bytes:
    """The 3-D tensor map of ``count`` row-major 1-byte matrices (``rows`` x ``cols``, row pitch
    ``cols`` bytes, matrix ``l`` at ``address + l * stride``) read in boxes of ``box_rows`` x
    ``box_cols`` bytes of one matrix. Coordinates are (column, row, matrix); a box overhanging
    the matrix is filled with zeros (also counted as loaded bytes). The box lands in shared
    memory as ``box_rows`` dense rows of ``box_cols`` bytes, the 16-byte chunks of each row
    permuted by the TMA ``swizzle`` span (0, 32, 64 or 128 bytes)."""
    if address % 16 or cols % 16 or stride % 16:
        raise ValueError(
            f"TMA needs 16-byte aligned matrices, rows and matrix stride: address "
            f"0x{address:x}, {cols} int8 columns, stride {stride} bytes"
        )
    what = f"{count} int8 matrices of {rows} x {cols} (stride {stride} B)"
    what += f", box {box_rows} x {box_cols}"
    return _encode(_UINT8, (cols, rows, count), (cols, stride), (box_cols, box_rows, 1), address,
                   swizzle, what)  # fmt: skip
