"""Does blocking A's rows (cuda_blocks, 2026-11-28) slow scheme II down where the old rule kept
one block of rows and narrow column blocks? Float64 inputs (exp_rand, phi = 0.5), n = 1024,
2048 and 4096, fused GEMM, in one process on the H200, burst: the shipped rule
(ROW_SPLIT_NB = 512) against the old rule (all rows, the widest column block that fits, at
least the padding) and ROW_SPLIT_NB = 256 / 1024; each with the bits of the shipped rule.
Usage: PYTHONPATH=. python results/bench/ozaki_row_blocks_small_n_h200_2026-11-28/bench.py"""

from functools import partial

import cupy as cp

from precision.gemm import ozaki_cuda as oc

shipped = oc.cuda_blocks


def old_rule(M, N, kp, L, gemm, budget):
    """Before 2026-11-28: one block of rows, nb from what A's residues leave (>= the padding)."""
    pad = oc.PAD[gemm]
    mp = oc._rows_padded(M, gemm)
    nb = max(pad, (budget - L * mp * kp) // (L * kp + (4 if gemm == "cublas" else 1) * L * mp))
    nb = nb // 256 * 256 if nb >= 256 else nb // pad * pad
    return M, max(pad, min(nb, oc.round_up(N, pad)))


def with_split(width):
    def rule(*args):
        saved = oc.ROW_SPLIT_NB
        oc.ROW_SPLIT_NB = width
        try:
            return shipped(*args)
        finally:
            oc.ROW_SPLIT_NB = saved

    return rule


def ms(fn, reps=20):
    fn()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    means = []
    for _ in range(3):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        means.append(cp.cuda.get_elapsed_time(start, end) / reps)
    return min(means), max(means)


RULES = {"shipped (512)": shipped, "old": old_rule, "split 256": with_split(256),
         "split 1024": with_split(1024)}  # fmt: skip
for n in (1024, 2048, 4096):
    rng = cp.random.default_rng(1)
    A = (rng.random((n, n)) - 0.5) * cp.exp(0.5 * rng.standard_normal((n, n)))
    B = (rng.random((n, n)) - 0.5) * cp.exp(0.5 * rng.standard_normal((n, n)))
    lo, hi = ms(partial(cp.matmul, A, B))
    print(f"n = {n:5d} cuBLAS DGEMM {lo:8.3f}-{hi:8.3f} ms", flush=True)
    for target, terms in (("fp64", 15), ("fp32", 8)):
        ref = None
        for name, rule in RULES.items():
            oc.cuda_blocks = rule
            call = partial(oc.ozaki2_cuda, A, B, target=target, terms=terms, gemm="fused")
            D, run = call()
            u = cp.uint64 if D.dtype == cp.float64 else cp.uint32
            ref = D if ref is None else ref
            same = bool(cp.array_equal(D.view(u), ref.view(u)))
            lo, hi = ms(call)
            print(f"n = {n:5d} {target} {terms:2d} {name:<14} mb {run.mb:5d} nb {run.nb:5d} "
                  f"ws {run.workspace_bytes / (A.nbytes + B.nbytes):.3f}x "
                  f"{lo:8.3f}-{hi:8.3f} ms  same bits: {same}", flush=True)  # fmt: skip
        oc.cuda_blocks = shipped
