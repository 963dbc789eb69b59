"""The scaling study (precision.gemm.ozaki_scaling_study): its simulated errors equal those of
the real emulator, its quantisation errors are exact, and its finer scales respect the CRT
budget and are the largest that do."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from precision.gemm import gemm
from precision.gemm.ozaki import MODULI, crt_line_budget, line_stats
from precision.gemm.ozaki_bench import exp_rand
from precision.gemm.ozaki_scaling_study import (
    crt_headroom_bits,
    fine_scales,
    main,
    power_of_two_scales,
    quantisation_error,
    simulated_errors,
)
from precision.metrics import error_metrics
from precision.reference import exact_matmul


def _inputs(m: int, k: int, n: int, phi: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return exp_rand(rng, (m, k), phi), exp_rand(rng, (k, n), phi)


@pytest.mark.parametrize("phi", [0.0, 1.0])
def test_power_of_two_simulation_matches_the_emulator(phi: float) -> None:
    # 6 moduli: errors around 1e-6, far above the final rounding the simulation leaves out
    A, B = _inputs(40, 512, 36, phi, seed=3)
    terms = 6
    D = gemm(A, B, method="ozaki2", fmt="int8", target="fp64", terms=terms, backend="emulator")
    real = error_metrics(D, exact_matmul(A, B))
    sa, sb = line_stats(A, 1), line_stats(B, 0)
    moduli = MODULI[:terms]
    sim = simulated_errors(
        A, B, power_of_two_scales(sa, moduli, 512), power_of_two_scales(sb, moduli, 512)
    )
    assert real["err_median"] > 1e-9
    assert sim.median == pytest.approx(real["err_median"], rel=1e-6)
    assert sim.max == pytest.approx(real["err_max"], rel=1e-6)


def test_quantisation_error_is_exact() -> None:
    A, _ = _inputs(64, 96, 1, 1.0, seed=5)
    moduli = MODULI[:14]
    sigma = fine_scales(line_stats(A, 1), moduli, 96)
    got = quantisation_error(A, sigma, axis=1)
    for i, k in np.random.default_rng(0).integers(0, [64, 96], size=(200, 2)):
        s = Fraction(float(sigma[i]))
        xs = Fraction(float(A[i, k])) * s
        want = (round(xs) - xs) / s  # round(): nearest, ties to even
        assert abs(Fraction(float(got[i, k])) - want) <= abs(want) * 2**-52 + 2**-54 / s


def test_fine_scales_fill_the_budget_and_no_more() -> None:
    B = _inputs(1, 300, 80, 2.0, seed=7)[1]
    B[:, 5] = 0.0  # an all-zero column
    moduli = MODULI[:14]
    st = line_stats(B, 0)
    tau = fine_scales(st, moduli, 300)
    budget2 = Fraction(crt_line_budget(moduli, 300)) ** 2
    assert tau[5] == 1.0
    for j in range(80):
        if j == 5:
            continue
        norm2 = sum(Fraction(float(b)) ** 2 for b in B[:, j])
        m, e = np.frexp(tau[j])
        c = int(np.ldexp(m, 8))
        assert 128 <= c <= 255
        assert Fraction(float(tau[j])) ** 2 * norm2 <= budget2
        # the bound used (nfix) exceeds the true norm by < 2^-6 relative: the next scale up
        # overshoots the budget unless it stays within that slack
        up = Fraction(c + 1) * Fraction(2) ** (int(e) - 8)
        assert up**2 * norm2 * (1 + Fraction(1, 32)) > budget2


def test_finer_scales_lower_the_median_error() -> None:
    A, B = _inputs(96, 2048, 96, 0.5, seed=11)
    moduli = MODULI[:10]
    sa, sb = line_stats(A, 1), line_stats(B, 0)
    pow2 = simulated_errors(
        A, B, power_of_two_scales(sa, moduli, 2048), power_of_two_scales(sb, moduli, 2048)
    )
    fine = simulated_errors(A, B, fine_scales(sa, moduli, 2048), fine_scales(sb, moduli, 2048))
    assert fine.median < pow2.median / 1.2


def test_crt_headroom_is_small_for_aligned_lines_and_large_for_random_signs() -> None:
    moduli = MODULI[:14]

    def headroom(A: np.ndarray, B: np.ndarray) -> float:
        k = A.shape[1]
        sa = power_of_two_scales(line_stats(A, 1), moduli, k)
        sb = power_of_two_scales(line_stats(B, 0), moduli, k)
        return crt_headroom_bits(A, B, sa, sb, moduli)

    # equal rows and columns: Cauchy-Schwarz is tight, only the power-of-two steps remain
    aligned = headroom(np.ones((4, 1000)), np.ones((1000, 3)))
    assert 0.0 <= aligned < 2.0
    # random signs: |T| ~ sqrt(K) below the bound (6 bits at K = 4096), less the tail's max
    A, B = _inputs(64, 4096, 64, 0.0, seed=13)
    assert headroom(A, B) > 3.0


def test_cli_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--moduli", "1"])
    assert "--moduli must be in [2, 20], got 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["--sizes", "0"], "--sizes must be positive integers, got 0"),
     (["--sizes", "16", "-3"], "--sizes must be positive integers, got -3"),
     (["--phi", "nan"], "--phi must be in [0, 86.38], got nan"),
     (["--phi", "1", "-1", "inf"], "--phi must be in [0, 86.38], got -1 inf"),
     (["--phi", "87"], "--phi must be in [0, 86.38], got 87")],  # past the split's 2^996
)  # fmt: skip
def test_cli_rejects_bad_sizes_and_phi_before_any_work(
    args: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # --sizes 0 and --phi nan were ValueError tracebacks from inside the study
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[-1].endswith(f"error: {expected}"), err
    assert "Traceback" not in err
