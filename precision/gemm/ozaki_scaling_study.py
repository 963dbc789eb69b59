"""What scheme II's error would be under another scaling, measured without running it.

``python -m precision.gemm.ozaki_scaling_study [--sizes 4096 8192] [--phi 0 0.5 1]
[--moduli 14] [--bits 8]`` prints a markdown table: per size and φ, the median and maximum
elementwise relative error of ozaki2 (fp64) with the shipped power-of-two scaling and with
a finer, non-power-of-two one, on the error stage's own matrices of
:mod:`precision.gemm.ozaki_bench` (same seeds). About 30 s per φ at n = 4096 and 190 s at
8192 on 2 CPU cores (results/bench/ozaki_scaling_study_2026-11-26b.md).

Why this is exact enough to decide with. Whenever the CRT range holds (``|T| < M/2``, which
the scaling guarantees), scheme II returns ``RN(A'·B' / (σ_i·τ_j))`` with the scaled
integers ``A'[i,k] = rint(A[i,k]·σ_i)`` and ``B'[k,j] = rint(B[k,j]·τ_j)``. Its error before
that one rounding is therefore exactly ``E = ΔA·B + A·ΔB + ΔA·ΔB`` with ``ΔA = A'/σ − A``,
``ΔB = B'/τ − B``. This module forms ``ΔA``, ``ΔB`` per entry (:func:`quantisation_error`)
and ``E`` with float64 GEMMs (relative error of ``E`` about 1e-13, irrelevant here), so
``|E| / |AB|`` is the error of the scheme up to its final rounding (≤ 2^-53 relative). That
is the right measure wherever the quantisation error dominates, as it does with 14 moduli
(about 1e-15). The median uses ``|AB|`` from a float64 GEMM; the maximum re-evaluates the
``candidates`` largest ratios against :func:`precision.reference.exact_matmul`, since it
sits where ``|AB|`` is tiny. With the power-of-two scaling these numbers reproduce the GPU
bench's 14-moduli errors (docs/ozaki.md, "Measured"; this study's findings are in
docs/ozaki_speed.md).

The CRT headroom (:func:`crt_headroom_bits`) says how much larger the scales could have been
on the given inputs, and the errors with the shipped scales grown by that much show what a
scheme that checks for CRT wrap-around at run time could gain.

The finer scaling (:func:`fine_scales`): per line, ``σ = c·2^e`` with an integer
``c < 2^bits`` chosen as large as the CRT budget allows, instead of ``2^s``. The power of two
leaves each scaled line's norm bound between half the budget and the budget (on average
about half a bit per operand unused); ``c`` recovers nearly all of it. Not implemented in
the kernels: ``A·c`` is no longer exact in float64 and the result needs a division by
``c_i·c_j``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from precision.console import run_main
from precision.distributions import NORMAL_BOUND, exp_rand_phi_max
from precision.eft import split
from precision.gemm import ozaki as oz
from precision.gemm.ozaki_bench import error_inputs
from precision.reference import exact_matmul

#: Ratios re-evaluated against the exact product when taking the maximum.
CANDIDATES = 20


def power_of_two_scales(stats: oz.LineStats, moduli: tuple[int, ...], k: int) -> np.ndarray:
    """The shipped scales ``2^s`` per line (:func:`precision.gemm.ozaki.norm_shifts`)."""
    return np.ldexp(1.0, oz.norm_shifts(stats, oz.crt_q2(moduli, k)))


def fine_scales(stats: oz.LineStats, moduli: tuple[int, ...], k: int, bits: int = 8) -> np.ndarray:
    """Per line the largest ``σ = c·2^e``, ``c`` an integer below ``2^bits``, with
    ``σ^2·N <= X^2``: ``N = nfix·2^(2·emax − 40)`` is the line's norm bound
    (:class:`precision.gemm.ozaki.LineStats`) and ``X`` the
    :func:`precision.gemm.ozaki.crt_line_budget`. Computed in float64 with a relative safety
    margin of 2^-40, so the inequality holds strictly. 1 for all-zero lines."""
    norm2 = stats.nfix.astype(np.float64) * np.ldexp(1.0, 2 * stats.emax - oz.NORM_FRAC)
    with np.errstate(divide="ignore"):
        s = float(oz.crt_line_budget(moduli, k)) / np.sqrt(norm2) * (1.0 - 2.0**-40)
    e = np.frexp(s)[1]
    c = np.floor(np.ldexp(s, bits - e))
    return np.where(stats.zero, 1.0, np.ldexp(c, e - bits))


def quantisation_error(X: np.ndarray, scale: np.ndarray, axis: int) -> np.ndarray:
    """``ΔX = rint(X·σ)/σ − X`` per entry (float64), ``σ`` per row (``axis=1``) or column
    (``axis=0``) with at most 26 significant bits.

    ``X·σ`` has up to 79 bits, so it is formed exactly as ``p_hi + p_lo`` (the Veltkamp split
    ``eft.split`` of ``X`` into two parts of at most 26 significant bits, each times ``σ``
    exact; ``|X|`` below 2^996). Both
    parts' distances to their nearest integers are exact, and ``f`` = their sum (one rounding,
    at most 2^-54 absolute) differs from ``X·σ`` by an integer, so
    ``rint(X·σ) − X·σ = rint(f) − f``. A tie of ``X·σ`` may resolve differently from the
    kernels' ``rint``; its error has the same magnitude."""
    sig = scale[:, None] if axis == 1 else scale[None, :]
    hi, lo = split(X)
    p_hi, p_lo = hi * sig, lo * sig
    f = (p_hi - np.rint(p_hi)) + (p_lo - np.rint(p_lo))
    return (np.rint(f) - f) / sig


@dataclass(frozen=True)
class Errors:
    """Median and maximum elementwise relative error (the bench's err_median / err_max)."""

    median: float
    max: float


def simulated_errors(
    A: np.ndarray,
    B: np.ndarray,
    sa: np.ndarray,
    sb: np.ndarray,
    candidates: int = CANDIDATES,
    product: np.ndarray | None = None,
) -> Errors:
    """:class:`Errors` of scheme II with row scales ``sa`` and column scales ``sb`` (finite
    inputs, no exact zero in ``A·B``), from the quantisation error (module docstring).
    ``product``: ``A @ B`` in float64 if the caller has it (else computed here)."""
    dA = quantisation_error(A, sa, axis=1)
    dB = quantisation_error(B, sb, axis=0)
    E = dA @ B
    E += A @ dB
    E += dA @ dB
    del dA, dB
    rel = np.abs(E)
    rel /= np.abs(A @ B if product is None else product)
    median = float(np.median(rel))
    top = np.argsort(rel, axis=None)[-candidates:]
    rows, cols = np.unravel_index(top, rel.shape)
    del rel
    exact = np.diagonal(exact_matmul(A[rows], B[:, cols]))  # A[rows[c]] · B[:, cols[c]]
    return Errors(median, float(np.max(np.abs(E[rows, cols]) / np.abs(exact))))


def crt_headroom_bits(
    A: np.ndarray,
    B: np.ndarray,
    sa: np.ndarray,
    sb: np.ndarray,
    moduli: tuple[int, ...],
    product: np.ndarray | None = None,
) -> float:
    """``log2(bound / max_ij |A·B|_ij·sa_i·sb_j)`` with ``bound`` =
    :func:`precision.gemm.ozaki.crt_bound`: by how many bits the scales' products could grow
    on *these* inputs before some exact ``T_ij`` left the CRT range. The Cauchy–Schwarz
    budget behind the shipped scales guarantees ``>= 0`` for every input; more is a property
    of the data (random signs make ``|T|`` far smaller than the bound), which a scheme could
    use only with a run-time check for wrap-around. ``A·B`` in float64 (``product`` if the
    caller has it): its largest entries are not cancellations, so this is accurate to far
    better than a bit."""
    C = A @ B if product is None else product
    top = float(np.max(np.abs(C) * sa[:, None] * sb[None, :]))
    return math.log2(oz.crt_bound(moduli)) - math.log2(top) if top > 0 else math.inf


@dataclass(frozen=True)
class Study:
    """One (n, phi) case: errors per scaling, and the CRT headroom of the shipped scales."""

    errors: dict[str, Errors]
    headroom_bits: float
    #: Extra bits given to each side in the "shipped, grown" errors (``floor(headroom / 2)``).
    grown_bits: int


def study(n: int, phi: float, terms: int, bits: int) -> Study:
    """Errors of ``terms`` moduli at size ``n`` and ``phi``: the shipped power-of-two scales,
    ``bits``-bit scales, and the shipped scales times ``2^g`` on both sides with
    ``g = floor(headroom / 2)`` (:func:`crt_headroom_bits`: no entry leaves the CRT range)."""
    A, B = error_inputs(n, phi)
    C = A @ B  # shared by every scaling below
    moduli = oz.MODULI[:terms]
    sa, sb = oz.line_stats(A, 1), oz.line_stats(B, 0)
    pa, pb = power_of_two_scales(sa, moduli, n), power_of_two_scales(sb, moduli, n)
    head = crt_headroom_bits(A, B, pa, pb, moduli, product=C)
    grow = max(0, math.floor(head / 2)) if math.isfinite(head) else 0
    fa, fb = fine_scales(sa, moduli, n, bits), fine_scales(sb, moduli, n, bits)
    errors = {
        "power of two": simulated_errors(A, B, pa, pb, product=C),
        f"{bits}-bit": simulated_errors(A, B, fa, fb, product=C),
        "power of two, grown": simulated_errors(A, B, pa * 2.0**grow, pb * 2.0**grow, product=C),
    }
    return Study(errors, head, grow)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m precision.gemm.ozaki_scaling_study", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192],
                    help="matrix sizes n (default 4096 8192)")  # fmt: skip
    ap.add_argument("--phi", type=float, nargs="+", default=[0.0, 0.5, 1.0],
                    help="exp_rand phi of the inputs (default 0 0.5 1)")  # fmt: skip
    ap.add_argument("--moduli", type=int, default=14, help="number of moduli (default 14)")
    ap.add_argument("--bits", type=int, default=8, help="bits of the finer scales (default 8)")
    args = ap.parse_args(argv)
    bad_sizes = [n for n in args.sizes if n < 1]
    if bad_sizes:
        ap.error(f"--sizes must be positive integers, got {' '.join(map(str, bad_sizes))}")
    # entries finite in float64, and below 2^996 for quantisation_error's Veltkamp split:
    # |X| <= 0.5 exp(8 phi) < 2^996 for phi <= 86.38
    phi_max = min(exp_rand_phi_max(), math.floor(997 * math.log(2) / NORMAL_BOUND * 100) / 100)
    bad_phi = [phi for phi in args.phi if not 0 <= phi <= phi_max]  # NaN fails too
    if bad_phi:
        ap.error(f"--phi must be in [0, {phi_max:g}], got {' '.join(f'{p:g}' for p in bad_phi)}")
    if not 2 <= args.moduli <= len(oz.MODULI):
        ap.error(f"--moduli must be in [2, {len(oz.MODULI)}], got {args.moduli}")
    if not 1 <= args.bits <= 26:
        ap.error(f"--bits must be in [1, 26], got {args.bits}")
    print(f"ozaki2 fp64, {args.moduli} moduli: median / max elementwise relative error")
    print(
        "| n | phi | power-of-two scales | "
        + f"{args.bits}-bit scales | CRT headroom (bits) | power-of-two x 2^g per side | g "
        + "| seconds |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        for phi in args.phi:
            t0 = time.perf_counter()
            res = study(n, phi, args.moduli, args.bits)
            e = list(res.errors.values())
            cells = " | ".join(f"{x.median:.3g} / {x.max:.3g}" for x in e[:2])
            print(
                f"| {n} | {phi:g} | {cells} | {res.headroom_bits:.2f} | "
                f"{e[2].median:.3g} / {e[2].max:.3g} | {res.grown_bits} | "
                f"{time.perf_counter() - t0:.0f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    run_main(main)
