"""Edges of the GEMM kernels' schedules that the recorded cases never reach (found by a
mutation audit, 2026-11-27): the corrected split's scale 2^s and the epilogue's subnormals at
the bottom of fp32's range, float satf's NaN -> +0 in the last k-block, and record verify's
hash checks. Expected values from exact powers-of-two arithmetic (checked with Fractions) and
the kernels' documented contract (lo = fmt(fp32(x - hi)·2^s), subnormals kept, satf NaN -> +0),
or from the recorded H200 bits in tests/data/gemm; the CUDA kernels are run on the same
cases where a GPU is present."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from precision.gemm.api import gemm
from precision.gemm.record import array_sha256, case_inputs, sample_rows, verify

DATA = Path(__file__).parents[1] / "data" / "gemm" / "cuda_cases_sm90.npz"


def _f32(fr: Fraction) -> np.float32:
    x = np.float32(float(fr))
    assert Fraction(float(x)) == fr  # exactly representable in fp32 (subnormals included)
    return x


P = lambda e: Fraction(2) ** e  # noqa: E731


@pytest.mark.parametrize(
    ("fmt", "a", "x", "expected"),
    [
        # bf16, s = 8: x - hi = 2^-135 + 2^-141 is an fp32 subnormal; scaled by 2^8 it is the
        # bf16 subnormal 2^-127 + 2^-133 (exact), so the corrected product is a*x exactly.
        # (s = 7 would make it 2^-128 + 2^-134, a tie that rounds to 2^-128.)
        ("bf16", P(20), P(-126) + P(-135) + P(-141), P(-106) + P(-115) + P(-121)),
        # bf16: lo = 2^-120 (normal); corr * 2^-8 = 2^-128 is an fp32 subnormal, which the
        # epilogue's __fmul_rn keeps (ftz=False): the result is x exactly.
        ("bf16", P(0), P(-119) + P(-128), P(-119) + P(-128)),
        # tf32, s = 0: x - hi = 2^-138 + 2^-140 is below half the tf32 subnormal ulp 2^-136,
        # so lo = 0 and the result is a * hi = 2^-106 (s = 1 would give lo*2 = 2^-136 and
        # 2^-106 + 2^-117).
        ("tf32", P(20), P(-126) + P(-138) + P(-140), P(-106)),
    ],
)
@pytest.mark.parametrize("backend", ["emulator", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_corrected_split_scale_at_the_bottom_of_fp32_range(fmt, a, x, expected, backend):
    A = np.array([[_f32(a)]], np.float32)
    B = np.array([[_f32(x)]], np.float32)
    D = gemm(A, B, method="corrected", fmt=fmt, correction="ootomo", backend=backend)
    assert D.dtype == np.float32 and D.shape == (1, 1)
    assert Fraction(float(D[0, 0])) == expected


def _hashed_from_full(tmp_path, *, bad_sha_d=False, bad_sha_a=False):  # noqa: ANN001, ANN202
    """A hashed record built from the committed full record n16/uniform/gemm_plain_e4m3
    (recorded H200 output bits), optionally with a wrong output or input hash."""
    key, kernel = "n16/uniform", "gemm_plain_e4m3"
    with np.load(DATA) as z:
        A = z[f"{key}/A"].view(np.float32)
        B = z[f"{key}/B"].view(np.float32)
        D = z[f"{key}/{kernel}/D"].copy()
    A2, B2 = case_inputs(16, "uniform")
    assert array_sha256(A2) == array_sha256(A) and array_sha256(B2) == array_sha256(B)
    rows = sample_rows(16)
    assert 5 not in rows
    Dh = D.copy()
    if bad_sha_d:
        Dh[5, 5] ^= np.uint32(1)  # a row that is not stored: only the hash can tell
    Ah = A.copy()
    if bad_sha_a:
        Ah.view(np.uint32)[2, 2] ^= np.uint32(1)
    path = tmp_path / "hashed.npz"
    np.savez(
        path,
        **{
            f"{key}/sha_A": np.array(array_sha256(Ah)),
            f"{key}/sha_B": np.array(array_sha256(B)),
            f"{key}/{kernel}/sha_D": np.array(array_sha256(Dh.view(np.float32))),
            f"{key}/{kernel}/rows": D[rows],
        },
    )
    return path


def test_full_verify_of_a_hashed_record_reports_a_wrong_output_hash(tmp_path):
    (ok,) = verify(str(_hashed_from_full(tmp_path)))
    assert (ok["identical"], ok["mismatches"]) == (True, 0)
    (r,) = verify(str(_hashed_from_full(tmp_path, bad_sha_d=True)))
    assert (r["identical"], r["mismatches"], r["checked"]) == (False, -1, "all")
    (rr,) = verify(str(_hashed_from_full(tmp_path, bad_sha_d=True)), rows_only=True)
    assert (rr["identical"], rr["checked"]) == (True, "rows")  # documented: rows only


def test_verify_refuses_a_recording_whose_a_hash_alone_differs(tmp_path):
    with pytest.raises(RuntimeError, match="regenerated inputs differ"):
        verify(str(_hashed_from_full(tmp_path, bad_sha_a=True)))


@pytest.mark.parametrize(
    ("fmt", "K", "nan_at"),
    [("e4m3", 1, 0), ("fp16", 64, 63)],  # NaN in the last k-block: nothing washes the sign out
)
@pytest.mark.parametrize("backend", ["emulator", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_float_satf_maps_a_final_nan_to_plus_zero_bits(fmt, K, nan_at, backend):
    """satf: NaN -> +0 (not -0). fp16: Inf (65504 * 2 rounds to Inf) * 0 = NaN; e4m3: a NaN
    input. The NaN sits in the last k-block, so the kernel's last clamp decides the bits."""
    A = np.zeros((1, K), np.float32)
    B = np.zeros((K, 1), np.float32)
    A[0, nan_at] = np.nan if fmt == "e4m3" else np.float32(131008.0)
    B[nan_at, 0] = 1.0 if fmt == "e4m3" else 0.0
    D = gemm(A, B, method="satf", fmt=fmt, backend=backend)
    assert D.view(np.uint32)[0, 0] == 0
