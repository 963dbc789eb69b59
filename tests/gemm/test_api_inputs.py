"""gemm() input validation: array-likes and dtypes, and every argument checked whether or not
the method uses it (unknown names get a "did you mean"; Ozaki-only arguments are refused
elsewhere), so a typo never runs silently."""

from __future__ import annotations

import numpy as np
import pytest

from precision.gemm import gemm
from precision.gemm.api import OZAKI_METHODS
from precision.gemm.schedule import METHODS


def _inputs(m: int = 16, k: int = 16, n: int = 8) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    A = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    B = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    return A, B


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(f"u{x.dtype.itemsize}")


# ------------------------------------------------------------------------------ A and B


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"method": "corrected", "fmt": "tf32"},
        {"fmt": "fp32", "backend": "numpy"},
        {"method": "ozaki2"},
        {"method": "ozaki1", "fmt": "fp16"},
    ],
)
def test_nested_lists_are_taken_like_arrays(kwargs) -> None:
    A, B = _inputs()
    A64, B64 = A.astype(np.float64), B.astype(np.float64)  # the lists' dtype
    want = gemm(A64, B64, **kwargs)
    got = gemm(A64.tolist(), B64.tolist(), **kwargs)
    assert got.dtype == want.dtype and np.array_equal(_bits(got), _bits(want))


def test_ragged_lists_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="A is not a rectangular array"):
        gemm([[1.0, 2.0], [3.0]], [[1.0], [2.0]])


@pytest.mark.parametrize("method", ["plain", "corrected", "ozaki1", "ozaki2"])
@pytest.mark.parametrize("which", ["A", "B"])
def test_complex_input_is_refused_not_truncated(method, which) -> None:
    A, B = _inputs()
    A, B = A.astype(np.float64), B.astype(np.float64)
    if which == "A":
        A = A * (1 + 1j)
    else:
        B = B.astype(np.complex64)  # a zero imaginary part is still refused
    with pytest.raises(TypeError, match=f"{which} has complex dtype complex"):
        gemm(A, B, method=method)
    with pytest.raises(TypeError, match=f"{which} has complex dtype complex"):
        gemm(A.tolist(), B.tolist(), method=method)


@pytest.mark.parametrize(
    ("bad", "dtype"),
    [(np.full((16, 16), "a"), "<U1"), (np.full((16, 16), b"a"), "|S1"), (None, "object")],
)
def test_non_numeric_input_names_the_argument_and_dtype(bad, dtype) -> None:
    A, B = _inputs()
    if bad is None:
        bad = A.astype(object)
    with pytest.raises(TypeError, match=rf"A has dtype {dtype}; gemm takes real numeric"):
        gemm(bad, B)
    with pytest.raises(TypeError, match=rf"B has dtype {dtype}; gemm takes real numeric"):
        gemm(A, bad.T, fmt="fp32", backend="numpy")


def test_integer_and_bool_inputs_still_run() -> None:
    A, B = _inputs()
    ones = gemm(np.ones((16, 16), np.int64), np.ones((16, 8), bool))
    assert ones.dtype == np.float32 and np.all(ones == 16)
    assert np.array_equal(gemm(A, B), gemm(A.astype(np.float64), B.astype(np.float64)))


# ------------------------------------------------------------------------------ arguments


def test_unknown_method_lists_every_method_with_a_suggestion() -> None:
    A, B = _inputs()
    with pytest.raises(ValueError, match="did you mean 'corrected'") as exc:
        gemm(A, B, method="corected")
    for method in METHODS + OZAKI_METHODS:
        assert method in str(exc.value)
    with pytest.raises(ValueError, match="method='ozaki3': unknown; did you mean 'ozaki"):
        gemm(A, B, method="ozaki3")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"backend": "emu"},
            r"backend='emu': unknown; did you mean 'emulator'\? \(expected "
            r"one of emulator, cuda, cublas, numpy\)",
        ),
        ({"backend": "emu", "method": "ozaki1"}, "did you mean 'emulator'"),
        ({"method": "corrected", "correction": "otomo"}, "did you mean 'ootomo'"),
        ({"method": "plain", "correction": "otomo"}, "correction='otomo': unknown"),
        (
            {"method": "satf", "correction": "x"},
            r"correction='x': unknown \(expected one of "
            r"ootomo, markidis\)",
        ),
        ({"method": "ozaki2", "correction": "markidiss"}, "did you mean 'markidis'"),
        ({"arch": "sm91"}, r"arch='sm91': unknown; did you mean 'sm90'\?.*sm100.*sm70"),
        ({"arch": "sm91", "method": "ozaki1"}, "arch='sm91'"),
        ({"arch": "sm91", "method": "ozaki2"}, "arch='sm91'"),
        ({"arch": "sm91", "fmt": "fp32", "backend": "numpy"}, "arch='sm91'"),
        ({"arch": "sm91", "fmt": "fp32"}, "arch='sm91'"),
        ({"arch": "hopper", "fmt": "fp64", "backend": "numpy"}, "arch='hopper': unknown"),
    ],
)
def test_unknown_names_are_refused_whether_or_not_used(kwargs, match) -> None:
    A, B = _inputs()
    with pytest.raises(ValueError, match=match):
        gemm(A, B, **kwargs)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("kwargs", "shown"),
    [
        ({"terms": -3}, "terms=-3"),
        ({"terms": 4}, "terms=4"),
        ({"target": "fp8"}, "target='fp8'"),
        ({"target": "fp32"}, "target='fp32'"),
    ],
)
def test_ozaki_arguments_are_refused_elsewhere(method, kwargs, shown) -> None:
    A, B = _inputs()
    fmt = "fp16" if method != "plain" else None
    with pytest.raises(
        ValueError,
        match=rf"{shown}: terms and target apply to method='ozaki1' / 'ozaki2' only, got "
        rf"method='{method}'",
    ):
        gemm(A, B, method=method, fmt=fmt, **kwargs)
    with pytest.raises(ValueError, match="apply to method='ozaki1' / 'ozaki2' only"):
        gemm(A, B, method="plain", fmt="fp32", backend="numpy", **kwargs)


def test_defaults_and_valid_spellings_still_run() -> None:
    A, B = _inputs()
    D = gemm(A, B)
    for kwargs in (
        {"terms": "auto", "target": "fp64", "correction": "markidis"},  # the defaults/known
        {"arch": "SM90"},
        {"arch": "sm_90"},
    ):
        assert np.array_equal(_bits(gemm(A, B, **kwargs)), _bits(D))
    assert gemm(A, B, fmt="fp32", backend="numpy", arch="sm80").dtype == np.float32
    oz = gemm(A, B, method="ozaki2", correction="ootomo", arch="sm90", terms=6, target="fp32")
    assert oz.dtype == np.float32
