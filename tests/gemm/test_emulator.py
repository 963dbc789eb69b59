"""Emulator backend of precision.gemm: operand rounding, algebraic checks, API errors."""

from __future__ import annotations

import numpy as np
import pytest

from precision.gemm import all_schedules, available_backends, gemm, get_schedule
from precision.gemm.emulator import run_schedule, satf
from precision.gemm.operands import round_operand, split_operand


def _inputs(m, k, n, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    A = (rng.uniform(-1, 1, (m, k)) * scale).astype(np.float32)
    B = (rng.uniform(-1, 1, (k, n)) * scale).astype(np.float32)
    return A, B


def test_split_fp16_matches_exact_arithmetic():
    # hi + lo * 2^-11 must equal x to within fp16's residual rounding, computed in fractions
    from fractions import Fraction

    x = np.array([1.0 + 2.0**-20, -0.3, 1e-3, 123.456, 2.0**-20], dtype=np.float32)
    hi, lo = split_operand(x, "fp16", 11)
    for xi, h, lo_i in zip(x, hi, lo, strict=True):
        h = Fraction(float(h))
        resid = (Fraction(float(xi)) - h) * 2**11  # exact
        assert Fraction(float(lo_i)) == Fraction(float(np.float16(float(resid))))  # one rounding


def test_round_operand_fp8_saturates_and_int8_clamps():
    x = np.array([1e6, -1e6, 3.0, np.nan], dtype=np.float32)
    e4 = round_operand(x, "e4m3").astype(np.float32)
    assert e4[0] == 448.0 and e4[1] == -448.0 and e4[2] == 3.0
    i8 = round_operand(np.array([300.0, -300.0, 2.5, 3.5, np.nan], np.float32), "int8")
    assert i8.tolist() == [127, -128, 2, 4, 0]


@pytest.mark.parametrize(("fmt", "max_normal"), [("e5m2", 1.75 * 2.0**15), ("e4m3", 1.75 * 2.0**8)])
def test_round_operand_fp8_satfinite_in_both_formats(fmt, max_normal):
    """cvt.rn.satfinite (PTX ISA): |x| beyond MAX_NORM, Inf included, gives ±MAX_NORM (OCP
    OFP8: 57344 for e5m2, 448 for e4m3), NaN stays NaN. 61440 is the midpoint of e5m2's
    57344 and 65536, which round-to-nearest-even alone would take to 65536 (overflow)."""
    x = np.array([1e6, -1e6, 61440.0, 60000.0, np.inf, -np.inf, np.nan, 3.0], np.float32)
    r = round_operand(x, fmt).astype(np.float64)
    m = max_normal
    assert r[:6].tolist() == [m, -m, m, m, m, -m]
    assert np.isnan(r[6]) and r[7] == 3.0


@pytest.mark.parametrize(
    ("method", "fmt", "limit"),
    [("plain", "fp16", 1.0), ("plain", "e4m3", 1.0), ("corrected", "tf32", 2.5)],
)
def test_thin_gemm_peak_is_the_rounded_operands(monkeypatch, method, fmt, limit, traced_peak):
    # A (640 x 640) against a thin B: the operands are rounded in chunks (their float64
    # temporaries, about 50 bytes per element, held for all of A at once peaked at 15.6-16.6x
    # A's fp32 bytes) and the chain decodes A in K panels (an item held all of A's rows
    # decoded for a thin B); what remains is A in its format (fp16: 0.5x, e4m3: 0.25x, tf32
    # hi and lo: 2x) and chunks
    import precision.gemm.operands as operands
    import precision.tensorcore.chain as chain

    monkeypatch.setattr(operands, "_CHUNK_ELEMENTS", 1 << 12)
    monkeypatch.setattr(chain, "_DECODE_CHUNK_ELEMENTS", 1 << 12)
    A, B = _inputs(640, 640, 3, seed=4)
    peak = traced_peak(lambda: gemm(A, B, method=method, fmt=fmt))
    assert peak < limit * A.nbytes, peak / A.nbytes


@pytest.mark.parametrize("s", all_schedules(), ids=lambda s: s.kernel)
def test_operands_rounded_in_chunks_are_the_same(monkeypatch, s):
    # chunked rounding (with the K padding and the fp8/int8 k-slot permutation read through
    # the chunks) gives the operands of rounding whole, bit for bit: specials, subnormals,
    # values beyond every format's range, ragged K
    import precision.gemm.operands as operands

    rng = np.random.default_rng(5)
    with np.errstate(over="ignore"):  # some become +-Inf
        A = (rng.standard_normal((23, 77)) * np.exp2(rng.integers(-140, 130, (23, 77)))).astype(
            np.float32
        )
    B = (rng.standard_normal((77, 19)) * np.exp2(rng.integers(-30, 30, (77, 19)))).astype(
        np.float32
    )
    A[3, :5] = [np.nan, np.inf, -np.inf, -0.0, 1e-45]
    B[7, :3] = [np.nan, -np.inf, 3.4e38]
    whole = operands.prepare_operands(A, B, s)
    monkeypatch.setattr(operands, "_CHUNK_ELEMENTS", 13)
    chunked = operands.prepare_operands(A, B, s)
    assert whole.keys() == chunked.keys()
    for name, x in whole.items():
        assert x.dtype == chunked[name].dtype and x.shape == chunked[name].shape
        assert np.array_equal(x.view(np.uint8), chunked[name].view(np.uint8)), name


def test_satf_helper():
    out = satf(np.array([np.inf, -np.inf, np.nan, 1.5], np.float32))
    fmax = np.finfo(np.float32).max
    assert out.tolist() == [fmax, -fmax, 0.0, 1.5]


@pytest.mark.parametrize("s", all_schedules(), ids=lambda s: s.kernel)
def test_small_integer_inputs_are_exact(s):
    # Small integers: every product and partial sum is exact in every format and accumulator,
    # so each method must return the exact integer product.
    rng = np.random.default_rng(1)
    A = rng.integers(-3, 4, (20, 37)).astype(np.float32)
    B = rng.integers(-3, 4, (37, 9)).astype(np.float32)
    exact = A.astype(np.int64) @ B.astype(np.int64)
    np.testing.assert_array_equal(run_schedule(A, B, s), exact.astype(np.float32))


def test_plain_equals_single_chain_of_mma():
    from precision.tensorcore import mma

    A, B = _inputs(16, 64, 8)
    got = gemm(A, B, method="plain", fmt="fp16")
    perm = np.concatenate(
        [np.array(get_schedule("plain", "f16").k_perm) + k0 for k0 in range(0, 64, 16)]
    )
    ref = mma(
        A[:, perm].astype(np.float16), B[perm].astype(np.float16), np.zeros((16, 8), np.float32)
    )
    np.testing.assert_array_equal(got, ref)


def test_corrected_beats_plain_and_ootomo_beats_markidis():
    A, B = _inputs(64, 512, 64, seed=3)
    exact = A.astype(np.float64) @ B.astype(np.float64)

    def err(D):
        return np.linalg.norm(D - exact) / np.linalg.norm(exact)

    plain = err(gemm(A, B, method="plain", fmt="fp16"))
    oot = err(gemm(A, B, method="corrected", fmt="fp16", correction="ootomo"))
    mark = err(gemm(A, B, method="corrected", fmt="fp16", correction="markidis"))
    sgemm_like = err((A @ B).astype(np.float32))  # numpy float32 GEMM for scale
    assert oot < mark < plain
    assert oot < 4 * sgemm_like


def test_edges_and_padding_do_not_change_values():
    # A 33 x 45 @ 45 x 7 product equals the top-left block of the zero-padded product.
    A, B = _inputs(33, 45, 7, seed=4)
    Ap = np.zeros((40, 64), np.float32)
    Ap[:33, :45] = A
    Bp = np.zeros((64, 16), np.float32)
    Bp[:45, :7] = B
    for method, fmt in [("plain", "bf16"), ("corrected", "tf32"), ("satf", "e5m2")]:
        small = gemm(A, B, method=method, fmt=fmt)
        big = gemm(Ap, Bp, method=method, fmt=fmt)
        assert small.shape == (33, 7) and small.dtype == np.float32
        np.testing.assert_array_equal(small.view(np.uint32), big[:33, :7].view(np.uint32))


def test_satf_clamps_overflow():
    A = np.full((16, 32), 2.0**100, np.float32)
    B = np.full((32, 8), 2.0**100, np.float32)
    assert np.isinf(gemm(A, B, method="plain", fmt="bf16")).all()
    np.testing.assert_array_equal(gemm(A, B, method="satf", fmt="bf16"), np.finfo(np.float32).max)


def test_satf_clamps_after_every_instruction_of_the_emulated_gpu():
    """satf clamps after each MMA instruction (docs/gemm.md). sm75's fp16 instruction takes
    k = 8, half of sm90's: +Inf from k < 8 is clamped to +FLT_MAX before the second
    instruction adds -Inf, which leaves -Inf, clamped to -FLT_MAX. One clamp per 16 k gave
    +Inf + (-Inf) = NaN, clamped to +0."""
    big = np.finfo(np.float32).max
    A = np.zeros((1, 16), np.float32)
    A[0, 0], A[0, 8] = 1e5, -1e5  # fp16 rounds them to +Inf and -Inf
    B = np.ones((16, 1), np.float32)
    assert gemm(A, B, method="satf", fmt="fp16", arch="sm75")[0, 0] == -big
    assert gemm(A, B, method="satf", fmt="fp16", arch="sm90")[0, 0] == 0.0  # one instruction
    A[0, 8] = 0.0
    A[0, 15] = -1e5  # both in sm75's second instruction: +FLT_MAX + (-Inf) = -Inf
    assert gemm(A, B, method="satf", fmt="fp16", arch="sm75")[0, 0] == -big


def test_api_errors():
    A, B = _inputs(4, 4, 4)
    with pytest.raises(ValueError, match="backend="):
        gemm(A, B, backend="magic")
    with pytest.raises(ValueError, match="inner dimensions"):
        gemm(A, B[:3])
    with pytest.raises(ValueError, match="2-D"):
        gemm(A[0], B)
    with pytest.raises(ValueError, match="correction="):
        gemm(A, B, method="corrected", correction="x")


def test_cuda_backend_without_gpu_raises_clearly():
    reasons = available_backends()
    assert reasons["emulator"] is None
    if reasons["cuda"] is None:
        pytest.skip("a GPU is present")
    A, B = _inputs(4, 4, 4)
    with pytest.raises(RuntimeError, match="backend='cuda'"):
        gemm(A, B, backend="cuda")
    with pytest.raises(RuntimeError, match="cublas"):
        gemm(A, B, backend="cublas", fmt="fp32")


@pytest.mark.parametrize("method", ["plain", "satf"])
def test_int8_gemm_temporaries_are_bounded(traced_peak, monkeypatch, method):
    # The integer mma core writes its int32 result block by block (it held ~32-40 bytes of
    # int64/float64 temporaries per output element: ~10x inputs + output at 2000x1x2000).
    # What remains per output element: the int32 accumulator, the next one, the float32 result.
    from precision.tensorcore import integer

    monkeypatch.setattr(integer, "_BLOCK_ELEMENTS", 1 << 14)
    rng = np.random.default_rng(3)
    m, k, n = 600, 1, 600
    A = rng.integers(-128, 128, (m, k)).astype(np.float32)
    B = rng.integers(-128, 128, (k, n)).astype(np.float32)
    expected = (A.astype(np.int64) @ B.astype(np.int64)).astype(np.float32)
    out: list[np.ndarray] = []
    peak = traced_peak(lambda: out.append(gemm(A, B, method=method, fmt="int8")))
    np.testing.assert_array_equal(out[0], expected)
    assert peak < 14 * m * n, peak / (m * n)
