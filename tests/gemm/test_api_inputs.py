"""gemm() input validation: array-likes and dtypes, and every argument checked whether or not
the method uses it (unknown names get a "did you mean"; Ozaki-only arguments are refused
elsewhere), so a typo never runs silently."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from precision.gemm import available_backends, gemm
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
        ({"arch": "sm91"}, r"unknown arch 'sm91'; did you mean 'sm90'\? \(valid: .*sm100.*sm70"),
        ({"arch": "sm91", "method": "ozaki1"}, "unknown arch 'sm91'"),
        ({"arch": "sm91", "method": "ozaki2"}, "unknown arch 'sm91'"),
        ({"arch": "sm91", "fmt": "fp32", "backend": "numpy"}, "unknown arch 'sm91'"),
        ({"arch": "sm91", "fmt": "fp32"}, "unknown arch 'sm91'"),
        ({"arch": "hopper", "fmt": "fp64", "backend": "numpy"}, "unknown arch 'hopper'"),
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


@pytest.mark.parametrize("method", ["plain", "satf", "ozaki1", "ozaki2"])
def test_a_correction_is_refused_where_the_method_has_none(method) -> None:
    """``correction="markidis"`` with plain, satf or an Ozaki method ran without a word, as if
    it had been honoured; the default is still accepted everywhere."""
    A, B = _inputs()
    with pytest.raises(
        ValueError,
        match=rf"correction='markidis': applies to method='corrected' only, got method='{method}'",
    ):
        gemm(A, B, method=method, correction="markidis")
    assert gemm(A, B, method=method, correction="ootomo").shape == (A.shape[0], B.shape[1])


def test_an_unknown_format_names_its_argument() -> None:
    A, B = _inputs()
    with pytest.raises(ValueError, match=r"^fmt='fp17': unknown format 'fp17'; did you mean"):
        gemm(A, B, fmt="fp17")


def test_defaults_and_valid_spellings_still_run() -> None:
    A, B = _inputs()
    D = gemm(A, B)
    for kwargs in (
        {"terms": "auto", "target": "fp64", "correction": "ootomo"},  # the defaults
        {"arch": "SM90"},
        {"arch": "sm_90"},
    ):
        assert np.array_equal(_bits(gemm(A, B, **kwargs)), _bits(D))
    assert gemm(A, B, fmt="fp32", backend="numpy", arch="sm80").dtype == np.float32
    oz = gemm(A, B, method="ozaki2", correction="ootomo", arch="sm90", terms=6, target="fp32")
    assert oz.dtype == np.float32


# ------------------------------------------------------------------ Ozaki fmt and target


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("FP64", "fp64"),
        ("f64", "fp64"),
        ("double", "fp64"),
        ("float64", "fp64"),
        (np.float64, "fp64"),
        ("FP32", "fp32"),
        ("single", "fp32"),
        ("f32", "fp32"),
        ("binary32", "fp32"),
        (np.dtype(np.float32), "fp32"),
    ],
)
@pytest.mark.parametrize("method", OZAKI_METHODS)
def test_ozaki_target_takes_every_alias(method, alias, canonical) -> None:
    """target="FP64" raised "expected one of ('fp64', 'fp32')" in gemm, plan_for,
    chosen_terms and ozaki_gemm; every public function takes any format alias."""
    from precision.gemm.ozaki import chosen_terms, make_plan, ozaki_gemm, plan_for

    A, B = _inputs()
    A, B = A.astype(np.float64), B.astype(np.float64)
    want = gemm(A, B, method=method, target=canonical, terms=4)
    for got in (
        gemm(A, B, method=method, target=alias, terms=4),
        ozaki_gemm(A, B, method=method, target=alias, terms=4),
    ):
        assert got.dtype == want.dtype and np.array_equal(_bits(got), _bits(want))
    plan, _, _ = plan_for(A, B, method=method, fmt="int8", target=alias, terms="auto")
    assert plan.target == canonical
    assert plan == plan_for(A, B, method=method, fmt="int8", target=canonical, terms="auto")[0]
    assert make_plan(method, "int8", alias, 4, 16).target == canonical
    assert chosen_terms(A, B, method=method, target=alias, terms="auto") == plan.terms


@pytest.mark.parametrize("fmt", ["s8", "S8", "int8", np.int8])
def test_ozaki_fmt_takes_every_alias_in_plan_for_too(fmt) -> None:
    """plan_for(..., fmt="s8") raised although gemm(fmt="s8") ran."""
    from precision.gemm.ozaki import chosen_terms, plan_for

    A, B = _inputs()
    A, B = A.astype(np.float64), B.astype(np.float64)
    plan, _, _ = plan_for(A, B, method="ozaki2", fmt=fmt, target="fp64", terms="auto")
    assert plan.fmt == "int8"
    assert plan == plan_for(A, B, method="ozaki2", fmt="int8", target="fp64", terms="auto")[0]
    assert chosen_terms(A, B, method="ozaki2", fmt=fmt, terms="auto") == plan.terms
    want = gemm(A, B, method="ozaki1", fmt="int8", terms=3)
    assert np.array_equal(_bits(gemm(A, B, method="ozaki1", fmt=fmt, terms=3)), _bits(want))


@pytest.mark.parametrize(
    ("target", "match"),
    [
        ("fp46", r"target='fp46': unknown; did you mean 'fp64'\? \(expected one of fp64, fp32"),
        ("fp16", r"target='fp16': format fp16 is not a target \(expected one of fp64, fp32"),
        ("nope", r"target='nope': unknown \(expected one of fp64, fp32, or an alias"),
    ],
)
def test_an_unknown_ozaki_target_lists_the_valid_ones(target, match) -> None:
    from precision.gemm.ozaki import chosen_terms, ozaki_gemm, plan_for

    A, B = _inputs()
    A, B = A.astype(np.float64), B.astype(np.float64)
    for call in (
        lambda: gemm(A, B, method="ozaki2", target=target),
        lambda: ozaki_gemm(A, B, target=target),
        lambda: plan_for(A, B, method="ozaki1", fmt="int8", target=target, terms=3),
        lambda: chosen_terms(A, B, method="ozaki2", target=target, terms=3),
    ):
        with pytest.raises(ValueError, match=match):
            call()


def test_fp64_target_in_any_spelling_is_the_default_elsewhere() -> None:
    A, B = _inputs()
    D = gemm(A, B)
    assert np.array_equal(_bits(gemm(A, B, target="FP64")), _bits(D))
    with pytest.raises(ValueError, match="target='single': terms and target apply to"):
        gemm(A, B, target="single")


# ------------------------------------------------------------------ arch


@pytest.mark.parametrize(("arch", "model"), [("sm86", "sm80"), ("SM_87", "sm80"), ("sm72", "sm70")])
@pytest.mark.parametrize("method", ["plain", "ozaki2"])
def test_an_arch_run_by_another_model_names_that_model(arch, model, method) -> None:
    """gemm(arch="sm86") suggested 'sm89' (the nearest spelling, another GPU's model); the
    runner's config already said that sm80 models it. Both now read one table
    (tensorcore.arch.MODELLED_BY)."""
    A, B = _inputs()
    with pytest.raises(ValueError) as exc:
        gemm(A, B, method=method, arch=arch)
    message = str(exc.value)
    assert f"unknown arch {arch!r}: that GPU generation has no model of its own; {model!r} " \
        f"models it, so write {model!r} (valid: " in message  # fmt: skip
    assert "did you mean" not in message


@pytest.mark.parametrize(
    ("method", "fmt", "problem"),
    [
        ("ozaki2", "int8", ("ozaki2", "int8", "emulator", "sm70")),
        ("ozaki1", "int8", ("ozaki1", "int8", "emulator", "sm70")),
        ("plain", "bf16", ("plain", "bf16", "emulator", "sm70")),
        ("corrected", "tf32", ("corrected", "tf32", "emulator", "sm75")),
    ],
)
def test_an_arch_without_the_format_is_refused_in_the_runners_words(method, fmt, problem) -> None:
    """gemm(method="ozaki2", fmt="int8", arch="sm70") ran, while `precision list` and the
    runner refuse int8 on sm70 (Volta has no int8 tensor cores)."""
    from precision.runner.catalog import combination_problem

    A, B = _inputs()
    want = combination_problem(*problem)
    assert want is not None
    with pytest.raises(ValueError) as exc:
        gemm(A, B, method=method, fmt=fmt, arch=problem[3])
    assert str(exc.value) == want


def test_ozaki1_fp16_still_runs_on_sm70() -> None:
    A, B = _inputs()
    A = A.astype(np.float64)
    want = gemm(A, B, method="ozaki1", fmt="fp16", terms=5)
    got = gemm(A, B, method="ozaki1", fmt="fp16", terms=5, arch="sm70")
    assert np.array_equal(_bits(got), _bits(want))  # exact integer arithmetic on every arch


# --------------------------------------------------------- combinations before the GPU


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "satf", "backend": "cublas"}, r"backend='cublas' has no baseline for method="),
        ({"fmt": "int8", "backend": "cublas"}, r"backend='cublas' has no baseline for method="),
        # cuBLAS's fp64 baseline (DGEMM) is in the list and in the message of the CPU refusal
        ({"method": "corrected", "fmt": "fp64", "backend": "cublas"}, r"\('plain', 'fp64', None\)"),
        ({"fmt": "fp64"}, r"fp64 baseline runs on backend='numpy' or 'cublas' \(DGEMM\) only"),
        ({"backend": "cuda", "arch": "sm80"}, r"built for 'sm90' only"),
        ({"method": "ozaki2", "backend": "cuda", "arch": "sm89"}, r"built for 'sm90' only"),
        ({"method": "ozaki2", "backend": "cublas"}, r"ozaki methods run on backend 'emulator'"),
    ],
)
def test_a_combination_that_exists_nowhere_is_named_before_the_gpu(kwargs, match) -> None:
    """method="satf", backend="cublas" said "needs an NVIDIA GPU" on a machine without one,
    but no machine runs it: gemm asked for the GPU before checking the combination."""
    A, B = _inputs()
    with pytest.raises(ValueError, match=match):
        gemm(A, B, **kwargs)


def test_cuda_gemm_names_an_arch_it_has_no_kernels_for_before_the_gpu() -> None:
    from precision.gemm import cuda_gemm, get_schedule

    A, B = _inputs()
    with pytest.raises(ValueError, match=r"arch='sm80': the CUDA GEMM kernels are built for"):
        cuda_gemm(A, B, get_schedule("plain", "fp16"), arch="sm80")


# ------------------------------------------------------------------ empty shapes

_CPU_CASES = [
    ({}, np.float32),
    ({"method": "satf"}, np.float32),
    ({"method": "corrected"}, np.float32),
    ({"method": "corrected", "fmt": "bf16", "correction": "markidis"}, np.float32),
    ({"method": "corrected", "fmt": "tf32"}, np.float32),
    ({"fmt": "int8"}, np.float32),
    ({"fmt": "e5m2", "method": "satf"}, np.float32),
    ({"fmt": "fp32"}, np.float32),
    ({"fmt": "fp32", "backend": "numpy"}, np.float32),
    ({"fmt": "fp64", "backend": "numpy"}, np.float64),
    ({"method": "ozaki2"}, np.float64),
    ({"method": "ozaki1", "fmt": "fp16", "target": "fp32"}, np.float32),
]


@pytest.mark.parametrize("shape", [(0, 16, 8), (16, 16, 0), (0, 0, 0), (16, 0, 8), (3, 0, 0)])
@pytest.mark.parametrize(("kwargs", "dtype"), _CPU_CASES)
def test_empty_shapes_give_the_methods_empty_sum(kwargs, dtype, shape) -> None:
    """gemm refused M, N or K = 0 ("empty matrices are not supported") while docs/gemm.md
    said any sizes work and ozaki_gemm, exact_matmul and mma took them. M = 0 or N = 0 now
    gives an empty (M, N) result of the method's dtype; K = 0 gives +0.0, what the method
    gives for all-zero operands (an empty sum)."""
    m, k, n = shape
    rng = np.random.default_rng(4)
    D = gemm(rng.standard_normal((m, k)), rng.standard_normal((k, n)), **kwargs)
    assert D.shape == (m, n) and D.dtype == dtype
    zeros = gemm(np.zeros((max(m, 1), 32)), np.zeros((32, max(n, 1))), **kwargs)
    assert zeros.dtype == dtype and np.array_equal(_bits(D), _bits(zeros[:m, :n]))
    assert not np.signbit(D).any() and not D.any()


@pytest.mark.parametrize(
    ("kwargs", "backend"),
    [
        ({"backend": "cuda"}, "cuda"),
        ({"backend": "cublas"}, "cublas"),
        ({"method": "ozaki2", "backend": "cuda"}, "cuda"),
        ({"fmt": "fp64", "backend": "cublas"}, "cublas"),
    ],
)
def test_empty_shapes_on_a_gpu_backend_still_need_the_gpu(kwargs, backend) -> None:
    if available_backends()[backend] is None:
        pytest.skip("a GPU is present here")
    with pytest.raises(RuntimeError, match="needs an NVIDIA GPU"):
        gemm(np.zeros((4, 0)), np.zeros((0, 3)), **kwargs)


# ------------------------------------------------------------- beyond the fp32 range


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"method": "satf"},
        {"method": "corrected"},
        {"method": "corrected", "fmt": "tf32"},
        {"fmt": "tf32"},
        {"fmt": "fp32"},
        {"fmt": "fp32", "backend": "numpy"},  # numpy's matmul warned of Inf·0 (invalid)
    ],
)
def test_float64_beyond_fp32_becomes_inf_without_a_warning(kwargs) -> None:
    """The fp32 conversion of plain / corrected / satf leaked numpy's "overflow encountered
    in cast". Beyond FLT_MAX's rounding range (|x| >= 2^128 - 2^103, half an ulp above
    FLT_MAX: the tie goes to even, i.e. up) a float64 becomes ±Inf by RNE, as by CUDA's
    cvt.rn.f32.f64; just below it, FLT_MAX (which fp16 and tf32 then round to Inf)."""
    tie = 2.0**128 - 2.0**103
    A = np.zeros((16, 16))
    A[0, 0], A[1, 0], A[2, 0], A[3, 0] = 1e300, -tie, np.nextafter(tie, 0), 1.0
    B = np.zeros((16, 8))
    B[0, :] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D = gemm(A, B, **kwargs)
    flt_max = np.finfo(np.float32).max
    col = D[:4, 0]
    if kwargs.get("method") == "satf":  # the satf clamp after the MMA: ±Inf -> ±FLT_MAX
        assert list(col) == [flt_max, -flt_max, flt_max, 1.0]
    elif kwargs.get("method") == "corrected":  # hi = Inf, lo = Inf - Inf: NaN
        assert np.isnan(col[:2]).all() and col[3] == 1.0
    elif kwargs.get("fmt") == "fp32":
        assert list(col) == [np.inf, -np.inf, flt_max, 1.0]
    else:  # FLT_MAX is beyond fp16 and rounds up out of tf32's 10 fraction bits
        assert list(col) == [np.inf, -np.inf, np.inf, 1.0]
