"""Study: how much CRT headroom do inputs other than the bench's exp_rand leave?

A checked, data-dependent scaling (docs/ozaki_speed.md) would grow scheme II's scales beyond
the Cauchy-Schwarz budget where |A·B| stays far below it, and redo the rows whose products
wrap. How often would that pay? For several input classes at n = 1024 and 4096, this prints
the headroom of the shipped power-of-two scales with 14 moduli
(precision.gemm.ozaki_scaling_study.crt_headroom_bits): by how many bits both sides' scales
could grow together before some exact product left the CRT range; a gain of one bit per side
needs 2. Also the fraction of rows of A that would wrap with one extra bit per side. CPU only.

Run: PYTHONPATH=. python results/bench/ozaki_headroom_by_input_2026-11-27.py
"""

from __future__ import annotations

import math

import numpy as np

from precision.gemm import ozaki as oz
from precision.gemm.ozaki_bench import exp_rand
from precision.gemm.ozaki_scaling_study import crt_headroom_bits, power_of_two_scales

TERMS = 14


def classes(n: int, rng: np.random.Generator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Input classes: random signs, then same-sign and structured ones."""
    return {
        "exp_rand phi=0.5": (exp_rand(rng, (n, n), 0.5), exp_rand(rng, (n, n), 0.5)),
        "normal(0, 1)": (rng.standard_normal((n, n)), rng.standard_normal((n, n))),
        "uniform(0, 1)": (rng.random((n, n)), rng.random((n, n))),
        "uniform(0, 1) @ uniform(-1, 1)": (rng.random((n, n)), rng.uniform(-1, 1, (n, n))),
        "A @ A.T, A normal": (lambda X: (X, X.T.copy()))(rng.standard_normal((n, n))),
        "normal + 1 (mean 1)": (rng.standard_normal((n, n)) + 1, rng.standard_normal((n, n)) + 1),
    }


def main() -> None:
    moduli = oz.MODULI[:TERMS]
    bound = oz.crt_bound(moduli)
    print(f"{TERMS} moduli: headroom in bits (both sides), rows that wrap at +1 bit per side")
    print("| n | inputs | headroom | rows wrapping at +1/side |")
    print("|---|---|---|---|")
    for n in (1024, 4096):
        rng = np.random.default_rng(11)
        for name, (A, B) in classes(n, rng).items():
            sa = power_of_two_scales(oz.line_stats(A, 1), moduli, n)
            sb = power_of_two_scales(oz.line_stats(B, 0), moduli, n)
            C = A @ B
            head = crt_headroom_bits(A, B, sa, sb, moduli, product=C)
            grown = np.abs(C) * (2 * sa)[:, None] * (2 * sb)[None, :]
            wraps = float(np.mean(np.any(grown >= bound * (1 - 2.0**-20), axis=1)))
            print(f"| {n} | {name} | {head:.2f} | {wraps:.1%} |", flush=True)
    print(f"(bound = M (1/2 - 2^-20) per the CRT range, log2 = {math.log2(bound):.2f})")


if __name__ == "__main__":
    main()
