"""Study: could 14 moduli carry a larger CRT range than the greedy list's first 14?

Scheme II's accuracy at a given number of moduli follows its norm budget q2
(precision.gemm.ozaki.crt_q2), which grows with log2 M, M the moduli's product. The shipped
list (precision.gemm.ozaki.MODULI) takes the largest pairwise coprime numbers <= 256 greedily.
This search finds, by branch and bound over 101..256, the L pairwise coprime numbers <= 256
(L = 14, 15) with the largest product, and compares q2 at K = 4096 and 8192. Every modulus of
the residue kernels must be 256 or odd in (128, 255] (ozaki_cuda.res_constants): the best sets
found satisfy that. CPU only, a few seconds.

Run: PYTHONPATH=. python results/bench/ozaki_moduli_search_2026-11-27.py
"""

from __future__ import annotations

import math

from precision.gemm.ozaki import MODULI, crt_q2

CANDIDATES = list(range(256, 100, -1))


def best_set(count: int) -> tuple[float, tuple[int, ...]]:
    """The ``count`` pairwise coprime candidates with the largest product (log2, set)."""
    best = [sum(math.log2(m) for m in MODULI[:count]) - 1e-9, MODULI[:count]]

    def grow(start: int, chosen: list[int], bits: float) -> None:
        if len(chosen) == count:
            if bits > best[0]:
                best[0], best[1] = bits, tuple(chosen)
            return
        need = count - len(chosen)
        for j in range(start, len(CANDIDATES)):
            m = CANDIDATES[j]
            if bits + need * math.log2(m) <= best[0]:  # no later set can beat the best
                break
            if all(math.gcd(m, x) == 1 for x in chosen):
                chosen.append(m)
                grow(j + 1, chosen, bits + math.log2(m))
                chosen.pop()

    grow(0, [], 0.0)
    return best[0], tuple(sorted(best[1], reverse=True))


for count in (14, 15):
    greedy = MODULI[:count]
    bits, found = best_set(count)
    print(f"{count} moduli, greedy: log2 M = {sum(math.log2(m) for m in greedy):.3f}, "
          f"q2 = {crt_q2(greedy, 4096)} (K = 4096), {crt_q2(greedy, 8192)} (K = 8192)")  # fmt: skip
    print(f"{count} moduli, best:   log2 M = {bits:.3f}, q2 = {crt_q2(found, 4096)} (K = 4096), "
          f"{crt_q2(found, 8192)} (K = 8192): {found}")  # fmt: skip
