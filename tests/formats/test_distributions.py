"""Input generators: dtype, shape, seeding, ranges and the property each one is meant to have."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision.distributions import DISTRIBUTIONS, get_distribution, make_inputs, sample

ROOT = Path(__file__).resolve().parents[2]

ALL = sorted(DISTRIBUTIONS)
ELEMENTWISE = sorted(n for n, d in DISTRIBUTIONS.items() if not d.paired)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 3, 7), (16, 24, 33)])
def test_shapes_dtype_and_determinism(name, shape):
    m, n, k = shape
    A, B = make_inputs(name, m, n, k, np.random.default_rng(7))
    assert A.shape == (m, k) and B.shape == (k, n)
    assert A.dtype == np.float32 and B.dtype == np.float32
    assert np.isfinite(A).all() and np.isfinite(B).all()
    A2, B2 = make_inputs(name, m, n, k, np.random.default_rng(7))
    np.testing.assert_array_equal(A.view(np.uint32), A2.view(np.uint32))
    np.testing.assert_array_equal(B.view(np.uint32), B2.view(np.uint32))
    if m * k > 4:
        A3, _ = make_inputs(name, m, n, k, np.random.default_rng(8))
        assert not np.array_equal(A, A3)


def test_uniform_bounds_and_parameters():
    x = sample("uniform", (200, 200), np.random.default_rng(0))
    assert x.min() >= -1 and x.max() <= 1
    assert x.min() < -0.99 and x.max() > 0.99
    y = sample("uniform", (100, 100), np.random.default_rng(0), low=2.0, high=3.0)
    assert y.min() >= 2 and y.max() <= 3


def test_normal_moments():
    x = sample("normal", (400, 400), np.random.default_rng(1), mean=3.0, std=0.5)
    assert abs(x.mean() - 3.0) < 0.01
    assert abs(x.std() - 0.5) < 0.01


def test_exp_rand_phi_zero_is_bounded_by_half():
    x = sample("exp_rand", (300, 300), np.random.default_rng(2), phi=0.0)
    assert np.abs(x).max() <= 0.5


def test_exp_rand_phi_widens_the_exponent_range():
    spreads = []
    for phi in (0.0, 1.0, 2.0):
        x = sample("exp_rand", (300, 300), np.random.default_rng(3), phi=phi)
        e = np.log2(np.abs(x[x != 0]))
        spreads.append(np.percentile(e, 99) - np.percentile(e, 1))
    assert spreads[0] < spreads[1] < spreads[2]
    # log|a| = log|U - 0.5| + phi * N: the N part adds phi / ln 2 binades per std deviation.
    x = sample("exp_rand", (500, 500), np.random.default_rng(4), phi=2.0)
    assert np.abs(x).max() > 2.0**8


def test_wide_range_spans_float64_exponents_for_float64_inputs():
    """exp_min/exp_max were capped at float32's [-126, 127] whatever the input dtype, which
    kept Ozaki fp64 sweeps from the wide ranges they are meant for."""
    A, B = make_inputs("wide_range", 64, 64, 64, np.random.default_rng(1), dtype=np.float64,
                       exp_min=-1022, exp_max=1023)  # fmt: skip
    for x in (A, B):
        e = np.frexp(np.abs(x))[1] - 1  # x = ±m 2^e, m in [1, 2)
        assert x.dtype == np.float64 and np.isfinite(x).all()
        assert e.min() < -900 and e.max() > 900, (e.min(), e.max())
        assert (np.abs(x) >= 2.0**-1022).all()  # every entry normal
    with pytest.raises(ValueError, match="need exp_min >= -126 for float32 inputs"):
        make_inputs("wide_range", 4, 4, 4, np.random.default_rng(1), exp_min=-127)


def test_wide_range_covers_every_binade():
    x = sample("wide_range", (100, 100), np.random.default_rng(5), exp_min=-20, exp_max=20)
    exps = np.unique(np.floor(np.log2(np.abs(x))).astype(int))
    np.testing.assert_array_equal(exps, np.arange(-20, 21))
    assert (x > 0).any() and (x < 0).any()


def test_cancellation_product_is_much_smaller_than_its_terms():
    eps = 2.0**-10
    A, B = make_inputs("cancellation", 8, 8, 64, np.random.default_rng(6), eps=eps)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    terms = np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    ratio = np.linalg.norm(exact) / np.linalg.norm(terms)
    assert ratio < 20 * eps
    assert ratio > 0


def test_make_inputs_elementwise_draws_a_then_b():
    rng = np.random.default_rng(9)
    expected_a = sample("normal", (4, 6), rng)
    expected_b = sample("normal", (6, 5), rng)
    A, B = make_inputs("normal", 4, 5, 6, np.random.default_rng(9))
    np.testing.assert_array_equal(A, expected_a)
    np.testing.assert_array_equal(B, expected_b)


#: The parameters and defaults docs/runner.md documents, per distribution.
DOCUMENTED_DEFAULTS = {
    "uniform": {"low": -1.0, "high": 1.0},
    "normal": {"mean": 0.0, "std": 1.0},
    "exp_rand": {"phi": 1.0},
    "wide_range": {"exp_min": -12, "exp_max": 12},
    "cancellation": {"eps": 2.0**-8},
}


@pytest.mark.parametrize("name", sorted(DOCUMENTED_DEFAULTS))
def test_defaults_are_the_documented_ones(name):
    assert get_distribution(name).defaults == DOCUMENTED_DEFAULTS[name]


def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match="did you mean 'uniform'"):
        get_distribution("uniferm")
    with pytest.raises(ValueError, match="no parameter 'phii'.*did you mean 'phi'"):
        make_inputs("exp_rand", 2, 2, 2, np.random.default_rng(0), phii=1.0)
    with pytest.raises(ValueError, match="must be a number"):
        make_inputs("exp_rand", 2, 2, 2, np.random.default_rng(0), phi="1")
    with pytest.raises(ValueError, match="phi >= 0"):
        make_inputs("exp_rand", 2, 2, 2, np.random.default_rng(0), phi=-1.0)
    with pytest.raises(ValueError, match="low < high"):
        sample("uniform", (2, 2), np.random.default_rng(0), low=1.0, high=1.0)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        make_inputs("uniform", 2, 2, 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="use make_inputs"):
        sample("cancellation", (2, 2), np.random.default_rng(0))


@pytest.mark.parametrize(
    ("name", "params", "limit"),
    [
        ("normal", {"std": 1e39}, "finite float32 entries"),
        ("uniform", {"low": -1e39, "high": 1e39}, "finite float32 entries"),
        ("exp_rand", {"phi": 12.0}, "phi <= 11.09 for finite float32"),
        ("wide_range", {"exp_max": 127}, "exp_max <= 126 for finite float32"),
    ],
)
def test_parameters_are_checked_against_the_requested_dtype(name, params, limit):
    """Bounds hold for make_inputs' dtype (float32 by default), not float64: these would
    have returned Infs."""
    with pytest.raises(ValueError, match=limit):
        make_inputs(name, 64, 64, 64, np.random.default_rng(0), **params)
    A, B = make_inputs(name, 64, 64, 64, np.random.default_rng(0), dtype=np.float64, **params)
    assert np.isfinite(A).all() and np.isfinite(B).all()
    with pytest.raises(ValueError, match=r"finite float16 entries"):
        make_inputs("normal", 4, 4, 4, np.random.default_rng(0), dtype="fp16", std=1e4)
    with pytest.raises(ValueError, match="finite float32"):
        sample(name, (4, 4), np.random.default_rng(0), **params)


@pytest.mark.parametrize("rng", [0, None, np.random.RandomState(0), "seed"])
def test_rng_must_be_a_generator(rng):
    with pytest.raises(TypeError, match="make_inputs: rng must be a numpy.random.Generator"):
        make_inputs("uniform", 2, 2, 2, rng)
    with pytest.raises(TypeError, match="sample: rng must be a numpy.random.Generator"):
        sample("uniform", (2, 2), rng)


@pytest.mark.parametrize("bad", [True, False, np.bool_(True), 2.0, 2.5, "4", None, 0, -1])
@pytest.mark.parametrize("label", ["m", "n", "k"])
def test_dimensions_must_be_positive_integers(bad, label):
    dims = {"m": 2, "n": 3, "k": 4, label: bad}
    with pytest.raises(ValueError, match=f"make_inputs: {label} must be a positive integer"):
        make_inputs("uniform", dims["m"], dims["n"], dims["k"], np.random.default_rng(0))


def test_numpy_integer_dimensions_are_accepted():
    A, B = make_inputs("normal", np.int64(2), np.uint8(3), np.int32(4), np.random.default_rng(0))
    assert A.shape == (2, 4) and B.shape == (4, 3)


@pytest.mark.parametrize("alias", ["fp16", "f16", "half", "float16", "FP16", np.float16])
def test_format_names_give_the_storage_dtype(alias):
    want = make_inputs("normal", 3, 4, 5, np.random.default_rng(1), dtype=np.float16)
    got = make_inputs("normal", 3, 4, 5, np.random.default_rng(1), dtype=alias)
    for w, g in zip(want, got, strict=True):
        assert g.dtype == np.float16 and np.array_equal(g.view(np.uint16), w.view(np.uint16))
    f32 = make_inputs("normal", 3, 4, 5, np.random.default_rng(1))
    f32_alias = make_inputs("normal", 3, 4, 5, np.random.default_rng(1), dtype="f32")
    for w, g in zip(f32, f32_alias, strict=True):
        assert g.dtype == np.float32 and np.array_equal(g.view(np.uint32), w.view(np.uint32))


@pytest.mark.parametrize("fmt", ["bf16", "e4m3", "e5m2", "tf32"])
def test_narrow_formats_are_one_correct_rounding_of_the_draws(fmt):
    from precision.formats import cast, get_format

    exact = make_inputs("uniform", 8, 8, 8, np.random.default_rng(2), dtype=np.float64)
    got = make_inputs("uniform", 8, 8, 8, np.random.default_rng(2), dtype=fmt)
    for x, g in zip(exact, got, strict=True):
        assert g.dtype == np.dtype(get_format(fmt).storage)
        want = cast(x, fmt)
        assert np.array_equal(g.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize(
    ("dtype", "match"),
    [
        (np.int8, "is the integer format int8"),
        ("int4", "is the integer format int4"),
        ("fp61", "'fp61' is an unknown dtype or format"),
        (np.complex64, "is an unknown dtype or format"),
    ],
)
def test_unsupported_dtypes_list_the_accepted_ones(dtype, match):
    with pytest.raises(ValueError, match=match) as exc:
        make_inputs("uniform", 2, 2, 2, np.random.default_rng(0), dtype=dtype)
    assert "fp64, fp32, fp16, bf16, e4m3, e5m2, tf32" in str(exc.value)


def test_exp_rand_phi_max_from_the_format_range():
    """ln(max finite) / 8, rounded down to 2 decimals: ln(3.4028e38) = 88.72 and
    ln(1.7977e308) = 709.78; e4m3 has no Inf (its cast saturates), so float64's bound."""
    from precision.distributions import exp_rand_phi_max

    assert exp_rand_phi_max("fp32") == 11.09 and exp_rand_phi_max(np.float32) == 11.09
    assert exp_rand_phi_max("fp64") == 88.72
    assert exp_rand_phi_max("e4m3") == 88.72
    assert exp_rand_phi_max("fp16") == 1.38  # ln(65504) = 11.09


def test_exp_rand_is_the_documented_formula_with_a_correctly_rounded_exp():
    """a_ij = (U − 0.5)·exp(φ·g), U = rng.random, g = rng.standard_normal drawn for all of A
    and then all of B; in float64 with exp correctly rounded (checked against mpmath at 200
    bits, not against np.exp), each product rounded once, and float32 inputs the rounding of
    these."""
    from fractions import Fraction

    import mpmath

    ctx = mpmath.MPContext()
    ctx.prec = 200

    def rn64(x: Fraction) -> float:
        return x.numerator / x.denominator  # Python's int / int is correctly rounded

    for phi in (0.0, 1.0, 7.5):
        A, B = make_inputs("exp_rand", 6, 4, 5, np.random.default_rng(11), dtype="float64", phi=phi)
        A32, B32 = make_inputs("exp_rand", 6, 4, 5, np.random.default_rng(11), phi=phi)
        rng = np.random.default_rng(11)
        for got, got32 in ((A, A32), (B, B32)):
            u = rng.random(got.shape)
            g = rng.standard_normal(got.shape)
            for (i, j), value in np.ndenumerate(got):
                e = ctx.exp(ctx.mpf(float(phi * g[i, j])))  # the argument is the float64 φ·g
                exp_rn = rn64(Fraction(int(e.man)) * Fraction(2) ** int(e.exp))
                want = rn64((Fraction(float(u[i, j])) - Fraction(1, 2)) * Fraction(exp_rn))
                assert value == want, (phi, i, j, value, want)
            np.testing.assert_array_equal(got32, got.astype(np.float32))


def _formula(name: str, rng: np.random.Generator, m: int, n: int, k: int) -> tuple:
    """A and B of ``name`` (default parameters) written out from numpy's primitive draws as
    docs/runner.md defines the distributions, in float64: A's draws first, then B's."""

    def one(shape: tuple[int, int]) -> np.ndarray:
        if name == "uniform":
            return rng.uniform(-1.0, 1.0, size=shape)  # low + (high - low)·U
        if name == "normal":
            return rng.normal(0.0, 1.0, size=shape)
        # wide_range: sign · m · 2^e, m ~ U[1, 2), e uniform on the integers [-12, 12]
        sign = rng.choice(np.array([-1.0, 1.0]), size=shape)
        mant = rng.uniform(1.0, 2.0, size=shape)
        return sign * mant * 2.0 ** rng.integers(-12, 12, size=shape, endpoint=True)

    return one((m, k)), one((k, n))


@pytest.mark.parametrize("name", ["uniform", "normal", "wide_range"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_distributions_are_their_documented_formulas(name, dtype):
    """Each generator is its formula over numpy's primitive draws (float32 inputs: the
    rounding of the float64 values), at a size past the threaded draws' threshold."""
    from precision.parallel_draws import MIN_PARALLEL

    m, n, k = 96, 80, max(112, MIN_PARALLEL // 96 + 1)
    A, B = make_inputs(name, m, n, k, np.random.default_rng(2024), dtype=dtype)
    WA, WB = _formula(name, np.random.default_rng(2024), m, n, k)
    np.testing.assert_array_equal(A, WA.astype(dtype))
    np.testing.assert_array_equal(B, WB.astype(dtype))


def test_cancellation_pairs_cancel_as_documented():
    """Along k the terms come in pairs (a, −a) × (b, b + eps·w): each pair's exact sum is
    −a·(fl32(b + eps·w) − b), so the product is about 1/eps smaller than its terms."""
    from fractions import Fraction

    eps = 2.0**-8
    A, B = make_inputs("cancellation", 5, 4, 9, np.random.default_rng(3))  # odd k: cut pair
    rng = np.random.default_rng(3)
    a = rng.uniform(-1.0, 1.0, size=(5, 5)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, size=(5, 4)).astype(np.float32)
    w = rng.uniform(-1.0, 1.0, size=(5, 4))
    np.testing.assert_array_equal(A[:, 0::2], a)
    np.testing.assert_array_equal(A[:, 1::2], -a[:, :4])
    np.testing.assert_array_equal(B[0::2], b)
    np.testing.assert_array_equal(B[1::2], (b + eps * w).astype(np.float32)[:4])
    for i, j in ((0, 0), (4, 3)):
        pair = Fraction(float(A[i, 0])) * Fraction(float(B[0, j])) + Fraction(
            float(A[i, 1])
        ) * Fraction(float(B[1, j]))
        assert pair == -Fraction(float(a[i, 0])) * (
            Fraction(float(B[1, j])) - Fraction(float(b[0, j]))
        )
        assert abs(pair) <= 2 * eps * abs(Fraction(float(a[i, 0])))


def test_inputs_match_those_drawn_on_the_h200_with_another_numpy():
    """The docs promise the same inputs for a config and seed on any machine. The H200 run
    results/h200/h200_speed_2gpu_2026-11-27f (numpy 2.5.2, another CPU) recorded each
    point's input seed and the fingerprint of its inputs; drawing them here gives the same
    fingerprint (exp_rand, φ = 0.5, float32, n = 1024)."""
    import json

    import pandas as pd

    from precision.runner.execute import inputs_sha256

    path = ROOT / "results/h200/h200_speed_2gpu_2026-11-27f/one/h200_speed/results.parquet"
    rows = pd.read_parquet(path)
    rows = rows[rows["m"] == 1024].drop_duplicates(["input_seed", "repeat"])
    assert len(rows) >= 1 and set(rows["numpy"]) == {"2.5.2"}
    for r in rows.itertuples():
        A, B = make_inputs(r.distribution, r.m, r.n, r.k, np.random.default_rng(int(r.input_seed)),
                           dtype=r.input_dtype, **json.loads(r.dist_params))  # fmt: skip
        assert inputs_sha256(A, B) == r.inputs_sha256


def test_numpy_scalars_are_numbers_for_distribution_parameters():
    """np.float32(2) or np.int64(3) from a script were refused as 'must be a number'."""
    a = sample("normal", (64, 64), np.random.default_rng(0), std=np.float32(2.0))
    b = sample("normal", (64, 64), np.random.default_rng(0), std=2.0)
    assert np.array_equal(a, b)
    c = sample("wide_range", (4, 4), np.random.default_rng(0), exp_min=np.int64(-3), exp_max=3)
    assert np.array_equal(c, sample("wide_range", (4, 4), np.random.default_rng(0), exp_min=-3,
                                    exp_max=3))  # fmt: skip
    with pytest.raises(ValueError, match="must be a number, got bool"):
        sample("normal", (2, 2), np.random.default_rng(0), std=np.bool_(True))


def test_exp_rand_holds_only_its_two_draws_at_full_size(traced_peak):
    """exp_rand held four full-size float64 arrays at once (u, g, phi·g and exp of it: 1.8 GiB
    beyond a float32 result at n = 8192). Its draws u and g are now the only full-size
    arrays; the exponential is taken in chunks, in place."""
    from precision.distributions import DISTRIBUTIONS

    f = DISTRIBUTIONS["exp_rand"].func
    n = 1024
    peak = traced_peak(lambda: f(np.random.default_rng(3), (n, n), phi=1.0))
    assert peak < 3.5 * 8 * n * n, peak / 2**20  # (u, g and chunks; it was 4 arrays and more)
