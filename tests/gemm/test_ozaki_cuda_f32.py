"""Float32 inputs of the CUDA Ozaki backends are read as float32 by the kernels (built with
``-DOZ_IN=float``), each entry converted to double in registers: the outputs are those of the
same inputs converted to float64 (exact), bit for bit, and no float64 copy of A or B is made
(the memory pool's peak of a float32 call is that of the float64 call; a float64 copy would
add 8 bytes per input entry). GPU only; the CPU replay of the same source is in
test_ozaki_cuda_host.py / test_ozaki1_cuda_host.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from precision.distributions import get_distribution
from precision.gemm.ozaki import ozaki_gemm

exp_rand = get_distribution("exp_rand").func

#: (scheme, fmt or GEMM path): scheme I's two digit formats, scheme II's two GEMM paths.
PATHS = [("ozaki1", "int8"), ("ozaki1", "fp16"), ("ozaki2", "cublas"), ("ozaki2", "fused")]
FIXED_TERMS = {("ozaki1", "fp64"): 8, ("ozaki1", "fp32"): 4,
               ("ozaki2", "fp64"): 15, ("ozaki2", "fp32"): 8}  # fmt: skip


def _run(cp: Any, A: Any, B: Any, method: str, path: str, target: str, terms: int | str,
         **kw: Any) -> tuple[Any, Any]:  # fmt: skip
    if method == "ozaki1":
        from precision.gemm.ozaki1_cuda import ozaki1_cuda

        return ozaki1_cuda(A, B, fmt=path, target=target, terms=terms, **kw)
    from precision.gemm.ozaki_cuda import ozaki2_cuda

    if path == "fused" and cp.cuda.Device().compute_capability != "90":
        pytest.skip("the fused INT8 GEMM is built for sm_90a (H100/H200)")
    return ozaki2_cuda(A, B, target=target, terms=terms, gemm=path, **kw)


def _operands(m: int, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 exp_rand operands with NaN, ±Inf, Inf·0, a zero row, subnormals, FLT_MAX."""
    rng = np.random.default_rng(seed)
    A = exp_rand(rng, (m, k), phi=2.0).astype(np.float32)
    B = exp_rand(rng, (k, n), phi=2.0).astype(np.float32)
    A[1, 2] = np.nan
    A[2, 3] = np.inf
    A[4, 1] = -np.inf  # meets B[1, 5] = 0: Inf·0
    B[1, 5] = 0.0
    A[3, :] = 0.0
    A[5, :4] = np.float32(-1e-40)  # subnormal float32
    A[6, 0] = np.finfo(np.float32).max
    B[0, 4] = -np.inf
    B[2, 1] = np.float32(3e-42)
    return A, B


def _assert_same_bits(got: Any, want: Any) -> None:
    """``got`` and ``want`` (CuPy or numpy) hold the same dtype and the same bits everywhere
    (NaN payloads and signed zeros included)."""
    got, want = (x.get() if hasattr(x, "get") else np.asarray(x) for x in (got, want))
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    u = f"u{want.dtype.itemsize}"
    np.testing.assert_array_equal(got.view(u), want.view(u))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(37, 53, 29), (257, 100, 130)], ids=["37x53x29", "257x100x130"])
@pytest.mark.parametrize("terms", ["fixed", "auto"])
@pytest.mark.parametrize("target", ["fp64", "fp32"])
@pytest.mark.parametrize(("method", "path"), PATHS)
def test_float32_inputs_give_the_bits_of_their_float64_copies(
    method: str, path: str, target: str, terms: str, shape: tuple[int, int, int]
) -> None:
    import cupy as cp

    m, k, n = shape
    A, B = _operands(m, k, n, seed=m + k + n)
    t: int | str = FIXED_TERMS[(method, target)] if terms == "fixed" else "auto"
    A32, B32 = cp.asarray(A), cp.asarray(B)
    if shape[0] > 100:  # a non-contiguous float32 operand: copied C-contiguous, still float32
        A32 = cp.asfortranarray(A32)
    D32, run32 = _run(cp, A32, B32, method, path, target, t)
    D64, run64 = _run(cp, cp.asarray(A, dtype=cp.float64), cp.asarray(B, dtype=cp.float64),
                      method, path, target, t)  # fmt: skip
    assert run32.plan == run64.plan
    assert D32.dtype == D64.dtype and D32.shape == (m, n)
    _assert_same_bits(D32, D64)
    # and the CPU emulator's bits for the float32 arrays themselves
    fmt = path if method == "ozaki1" else "int8"
    want = ozaki_gemm(A, B, method=method, fmt=fmt, target=target, terms=run32.plan.terms)
    _assert_same_bits(D32, want)


def _peak(cp: Any, call: Callable[[], Any]) -> tuple[Any, int]:
    """``call()`` and the largest number of bytes the memory pool had handed out during it,
    above what it held before (the pool's count only rises at an allocation)."""
    pool = cp.get_default_memory_pool()
    cp.cuda.Device().synchronize()
    base = pool.used_bytes()
    peak = [base]

    def alloc(size: int) -> Any:
        mem = pool.malloc(size)
        peak[0] = max(peak[0], pool.used_bytes())
        return mem

    with cp.cuda.using_allocator(alloc):
        out = call()
    cp.cuda.Device().synchronize()
    return out, peak[0] - base


@pytest.mark.gpu
@pytest.mark.parametrize("target", ["fp64", "fp32"])
@pytest.mark.parametrize(("method", "path"), PATHS)
def test_float32_inputs_are_not_copied_to_float64(method: str, path: str, target: str) -> None:
    """Neither call copies its inputs to float64: beyond its output and workspace, each
    allocates less than a quarter of what float64 copies of A and B (8 bytes per entry, alive
    for the whole call) would take. The workspace is within 1.5x the inputs' own size, float32
    or float64 (until 2026-11-28 both had the float64 call's workspace)."""
    import cupy as cp

    rng = np.random.default_rng(7)
    A = exp_rand(rng, (512, 384), phi=1.0).astype(np.float32)
    B = exp_rand(rng, (384, 448), phi=1.0).astype(np.float32)
    t = FIXED_TERMS[(method, target)]
    A32, B32 = cp.asarray(A), cp.asarray(B)
    A64, B64 = cp.asarray(A, dtype=cp.float64), cp.asarray(B, dtype=cp.float64)
    for a, b in ((A32, B32), (A64, B64)):  # warm-up: modules, cuBLAS handle, reductions
        _run(cp, a, b, method, path, target, t)
    (D64, run64), peak64 = _peak(cp, lambda: _run(cp, A64, B64, method, path, target, t))
    (D32, run32), peak32 = _peak(cp, lambda: _run(cp, A32, B32, method, path, target, t))
    copies = 8 * (A.size + B.size)
    for (a, b), D, run, peak in (((A32, B32), D32, run32, peak32), ((A64, B64), D64, run64,
                                                                     peak64)):  # fmt: skip
        assert run.workspace_bytes <= 1.5 * (a.nbytes + b.nbytes), (a.dtype, run)
        assert peak - D.nbytes - run.workspace_bytes < copies // 4, (a.dtype, peak, run)
    _assert_same_bits(D32, D64)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("method", "path"), PATHS)
def test_a_contiguous_view_off_the_16_byte_grid_is_read_as_its_copy(
    method: str, path: str, dtype: str
) -> None:
    """A C-contiguous view that starts one element into its allocation (K a multiple of 4,
    so the row kernel takes its aligned quad loads): it is copied to an aligned array first,
    and gives the copy's bits (before, such a view made a misaligned double2/float4 load)."""
    import cupy as cp

    m, k, n = 40, 64, 24
    A, B = _operands(m, k, n, seed=3)
    flat = cp.zeros(m * k + 1, dtype=dtype)
    flat[1:] = cp.asarray(A, dtype=dtype).ravel()
    view = flat[1:].reshape(m, k)
    assert view.flags.c_contiguous and view.data.ptr % 16 != 0
    Bd = cp.asarray(B, dtype=dtype)
    target = "fp32" if dtype == "float32" else "fp64"
    t = FIXED_TERMS[(method, target)]
    D_view, _ = _run(cp, view, Bd, method, path, target, t)
    D_copy, _ = _run(cp, view.copy(), Bd, method, path, target, t)
    _assert_same_bits(D_view, D_copy)


@pytest.mark.gpu
@pytest.mark.parametrize("target", ["fp64", "fp32"])
@pytest.mark.parametrize("path", ["cublas", "fused"])
def test_blocks_of_rows_give_the_emulator_bits(path: str, target: str) -> None:
    """Float32 inputs whose residues of A alone outgrow 1.5x their size: scheme II takes A in
    blocks of rows (NaN/Inf, subnormal and FLT_MAX entries in the first block, the zero row
    too), within the budget, with the CPU emulator's bits."""
    import cupy as cp

    A, B = _operands(1000, 300, 700, seed=21)
    A[900, 7] = np.nan  # and in the last block of rows
    t = FIXED_TERMS[("ozaki2", target)]
    D, run = _run(cp, cp.asarray(A), cp.asarray(B), "ozaki2", path, target, t)
    assert run.mb < A.shape[0] and run.workspace_bytes <= 1.5 * (A.nbytes + B.nbytes), run
    want = ozaki_gemm(A, B, method="ozaki2", fmt="int8", target=target, terms=t)
    _assert_same_bits(D, want)


@pytest.mark.gpu
@pytest.mark.parametrize("target", ["fp64", "fp32"])
@pytest.mark.parametrize(("method", "path"), PATHS)
def test_float16_inputs_give_the_bits_of_their_float64_values(
    method: str, path: str, target: str
) -> None:
    """Float16 inputs reach the kernels as float32 copies (exact; they were float64 copies
    before 2026-11-28): the outputs are those of the same values as float64, bit for bit, with
    float16 subnormals, ±Inf, NaN and the largest float16 among them."""
    import cupy as cp

    from precision.gemm.ozaki_cuda import device_inputs

    rng = np.random.default_rng(16)
    A = exp_rand(rng, (45, 70), phi=1.0).astype(np.float16)
    B = exp_rand(rng, (70, 38), phi=1.0).astype(np.float16)
    A[0, :3] = np.float16(6e-8)  # subnormal float16 (the smallest is 2^-24)
    A[1, 1], A[2, 2], B[3, 3] = np.inf, np.nan, -np.inf
    A[4, 0] = np.finfo(np.float16).max
    dA, dB = device_inputs(cp, cp.asarray(A), cp.asarray(B))
    assert dA.dtype == dB.dtype == cp.float32
    t = FIXED_TERMS[(method, target)]
    D16, run16 = _run(cp, cp.asarray(A), cp.asarray(B), method, path, target, t)
    D64, run64 = _run(cp, cp.asarray(A, dtype=cp.float64), cp.asarray(B, dtype=cp.float64),
                      method, path, target, t)  # fmt: skip
    assert run16.plan == run64.plan
    _assert_same_bits(D16, D64)
