"""Check of the Ozaki-II GPU kernels (``precision/kernels/ozaki2.cu`` through
:func:`precision.gemm.ozaki_cuda.ozaki2_cuda`) against an independent CPU reference of the
spec, and their phase timings.

``python -m precision.gemm.ozaki_cuda_check`` (GPU) runs, for n in {16, 100, 257, 1024} and
phi in {0, 1, 4}, fp64 with 15 moduli and fp32 with 8 moduli (plus NaN/Inf/zero/subnormal
cases and one ``terms="auto"`` case):

* line statistics (emax, esum, count, nfix, bad) and shifts against
  :func:`~precision.gemm.ozaki_spec_reference.ref_stats` and the reference's own budget and
  shift rule (:func:`~precision.gemm.ozaki_spec_reference.spec_q2`,
  :func:`~precision.gemm.ozaki_spec_reference.spec_shifts`);
* the int8 residue planes of A and of B's first column block against ``y mod m``;
* the output, bit for bit, against ``RN(T·2^-(s_i+t_j))`` with ``T = y_A @ y_B`` computed
  exactly (signed base-2^21 digits, float64 BLAS products below 2^53, Python ints) and
  rounded by the reference's own integer rounding
  (:func:`~precision.gemm.ozaki_spec_reference.round_exact`); special values by
  :func:`precision.gemm.ozaki.apply_specials`. The CRT itself (residue products, ``c_l``,
  ``S``, ``q``) is replayed with Python ints on sampled outputs, and ``max |T| / Mb`` is
  reported (the Cauchy-Schwarz bound says <= 1).

Then it times the phases at n = 8192 and 16384 (15 moduli, fp64) next to cuBLAS DGEMM.
``--cpu`` runs only the CPU proofs-by-exhaustion of the kernels' arithmetic (no GPU): the fp32
residue step for every t in [-2^22, 2^22) and every modulus, the digit and int32-reader
bounds, and the quotient estimate from the limbs; ``--cpu --host`` adds the kernels' source
run on the CPU (:mod:`precision.gemm.ozaki_host`). The reference itself is
:mod:`precision.gemm.ozaki_spec_reference`. Results go to stdout and, with ``$OUT`` set,
``$OUT/ozaki_cuda_check.json``. Exit status 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from fractions import Fraction
from typing import Any

import numpy as np

from precision.console import run_main
from precision.gemm.ozaki import (
    MODULI,
    crt_constants,
)
from precision.gemm.ozaki_host import (
    host_auto_terms,
    host_barriers,
    host_case,
    host_pipeline,
    host_residues,
    host_rounding,
)
from precision.gemm.ozaki_spec_reference import (
    MASK32,
    float_bits,
    make_operands,
    reference,
    sym_int,
    sym_mod,
)

# --------------------------------------------------------------------------- GPU checks


def check_case(
    cp: Any, n: int, phi: float, target: str, terms: int | str, specials: bool, gemm: str
) -> dict[str, Any]:
    from precision.gemm import ozaki_cuda as oc

    A, B = make_operands(n, phi, seed=1000 * n + int(10 * phi), specials=specials)
    Ad, Bd = cp.asarray(A), cp.asarray(B)
    D, run = oc.ozaki2_cuda(Ad, Bd, target=target, terms=terms, gemm=gemm)
    L = run.plan.terms
    ref = reference(A, B, L, target)
    out: dict[str, Any] = {"n": n, "phi": phi, "target": target, "terms": str(terms), "L": L,
                           "gemm": gemm, "specials": specials, "q2": ref["q2"],
                           "t_over_mb": ref["t_over_mb"], "crt_bad": ref["crt_bad"]}  # fmt: skip
    out["q2_match"] = run.q2 == ref["q2"]
    Dh = D.get()
    out["d_diff"] = int(np.count_nonzero(float_bits(Dh) != float_bits(ref["D"])))
    # stats and shifts, straight from the kernels
    dsa = oc.device_line_stats(cp, Ad, 1, ref["q2"])
    dsb = oc.device_line_stats(cp, Bd, 0, ref["q2"])
    stat_diff = 0
    for ds, rs, sh in ((dsa, ref["sa"], ref["s_a"]), (dsb, ref["sb"], ref["s_b"])):
        hs = ds.to_host()
        stat_diff += int(np.count_nonzero(hs.emax != rs["emax"]))
        stat_diff += int(np.count_nonzero(hs.esum != rs["esum"]))
        stat_diff += int(np.count_nonzero(hs.count != rs["count"]))
        stat_diff += int(np.count_nonzero(hs.bad != rs["bad"]))
        stat_diff += int(np.count_nonzero(hs.nfix != rs["nfix"]))
        stat_diff += int(np.count_nonzero(ds.shift.get() != sh))
    out["stat_diff"] = stat_diff
    # residue planes (cuBLAS padding: K to 16; B's columns 0..n-1 as one block)
    oc._set_constants(MODULI[:L])
    kp = -(-n // 16) * 16
    nbp = kp
    ares = cp.zeros((L, n, kp), dtype=cp.int8)
    oc.residues_rows(cp, Ad, dsa.shift, L, n, kp, ares)
    bres = cp.zeros((L, nbp, kp), dtype=cp.int8)
    oc.residues_cols(cp, Bd, dsb.shift, L, 0, n, nbp, kp, bres)
    # the fused kernel for A's rows (statistics, shifts and residues in one read; 128-padded)
    mpf, kpf = -(-n // 128) * 128, -(-n // 128) * 128
    afused = cp.full((L, mpf, kpf), 99, dtype=cp.int8)  # every byte must be overwritten
    dsf = oc.rows_fused(cp, Ad, ref["q2"], L, mpf, kpf, afused)
    hs = dsf.to_host()
    rs = ref["sa"]
    for got, want in (
        (hs.emax, rs["emax"]),
        (hs.esum, rs["esum"]),
        (hs.count, rs["count"]),
        (hs.bad, rs["bad"]),
        (hs.nfix, rs["nfix"]),
        (dsf.shift.get(), ref["s_a"]),
    ):
        stat_diff += int(np.count_nonzero(got != want))  # fmt: skip
    out["stat_diff"] = stat_diff
    ah, bh, fh = ares.get(), bres.get(), afused.get()
    res_diff = 0
    for li, m in enumerate(MODULI[:L]):
        ra = np.zeros((n, kp), dtype=np.int64)
        ra[:, :n] = sym_mod(ref["ya"], m)
        rb = np.zeros((nbp, kp), dtype=np.int64)
        rb[:n, :n] = sym_mod(ref["yb"].T, m)
        rf = np.zeros((mpf, kpf), dtype=np.int64)
        rf[:n, :n] = sym_mod(ref["ya"], m)
        res_diff += int(np.count_nonzero(ah[li] != ra)) + int(np.count_nonzero(bh[li] != rb))
        res_diff += int(np.count_nonzero(fh[li] != rf))
    out["res_diff"] = res_diff
    out["ok"] = bool(
        out["d_diff"] == 0 and stat_diff == 0 and res_diff == 0 and out["crt_bad"] == 0
        and out["q2_match"] and ref["t_over_mb"] <= 1.0
    )  # fmt: skip
    return out


def time_case(cp: Any, n: int, L: int, gemm: str, reps: int = 3) -> dict[str, Any]:
    from precision.gemm import ozaki_cuda as oc

    rs = cp.random.RandomState(n)  # exp_rand, phi = 0.5, generated on the device
    A = (rs.random_sample((n, n)) - 0.5) * cp.exp(0.5 * rs.standard_normal((n, n)))
    B = (rs.random_sample((n, n)) - 0.5) * cp.exp(0.5 * rs.standard_normal((n, n)))
    oc.ozaki2_cuda(A, B, target="fp64", terms=L, gemm=gemm)  # warm-up (build, cuBLAS)
    phases: list[dict[str, float]] = []
    for _ in range(reps):
        _, run = oc.ozaki2_cuda(A, B, target="fp64", terms=L, gemm=gemm, timed=True)
        phases.append(run.phase_ms)
    totals = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        oc.ozaki2_cuda(A, B, target="fp64", terms=L, gemm=gemm)
        e1.record()
        e1.synchronize()
        totals.append(cp.cuda.get_elapsed_time(e0, e1))
    cp.matmul(A, B)
    dg = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        cp.matmul(A, B)
        e1.record()
        e1.synchronize()
        dg.append(cp.cuda.get_elapsed_time(e0, e1))
    med = {k: float(np.median([p.get(k, 0.0) for p in phases])) for k in phases[0]}
    total = float(np.median(totals))
    dgemm = float(np.median(dg))
    return {"n": n, "L": L, "gemm": gemm, "phase_ms": med, "total_ms": total,
            "dgemm_ms": dgemm, "speedup_vs_dgemm": dgemm / total, "nb": run.nb,
            "workspace_gb": run.workspace_bytes / 1e9,
            "tflops": 2.0 * n**3 / total / 1e9}  # fmt: skip


# ------------------------------------------------------------------ CPU arithmetic proofs


def _inv_m32(m: int) -> tuple[int, int]:
    """fl32(1/m) = a·2^-b exactly (a integer)."""
    f = float(np.float32(1.0) / np.float32(m))
    mant, ex = math.frexp(f)
    return int(mant * 2**24), 24 - ex


def cpu_checks() -> dict[str, Any]:
    """Exhaustive / randomized CPU checks of the kernels' integer and fp32 arithmetic."""
    res: dict[str, Any] = {}
    # 1. fp32 residue step: q = rint_even(t·fl(1/m)) (the FMA's single rounding of the exact
    # product), r = t - q·m, equals the symmetric residue for every |t| <= 2^22, odd m. As
    # r = t - q·m is congruent to t by construction, it is the symmetric residue exactly when
    # it lies in [-(m-1)/2, (m-1)/2]: that range is checked, in chunks that stay in cache.
    # (rint_even(p / 2^b) = (p + 2^(b-1) - 1 + (floor(p / 2^b) & 1)) >> b: the odd floor
    # tips an exact half up, and nothing else crosses the next multiple of 2^b)
    bad = 0
    odd = [(m, *_inv_m32(m)) for m in MODULI if m != 256]
    for start in range(-(1 << 22), 1 << 22, 1 << 19):
        ts = np.arange(start, start + (1 << 19), dtype=np.int64)
        for m, a, b in odd:
            q = ts * a  # exact: < 2^46
            lsb = q >> b
            lsb &= 1
            q += (1 << (b - 1)) - 1
            q += lsb
            q >>= b
            q *= m
            np.subtract(ts, q, out=q)  # r = t - q·m
            np.abs(q, out=q)
            bad += int(np.count_nonzero(q > (m - 1) // 2))
    res["residue_step_mismatches"] = bad
    # 2. digits: y = sum d_p 2^(14p), |t| < 2^22 for every modulus (random and extreme y).
    rng = np.random.default_rng(7)
    y = rng.integers(-(2**62), 2**62, size=200000, dtype=np.int64, endpoint=True)
    y = np.concatenate([y, np.array([2**62, -(2**62), 0, 1, -1, 2**61 + 12345, -(2**56)])])
    v = y.copy()
    d = []
    for _ in range(4):
        dp = ((v & 0x3FFF) ^ 0x2000) - 0x2000
        d.append(dp)
        v = (v - dp) >> 14
    d.append(v)
    recon = sum(dp << (14 * p) for p, dp in enumerate(d[:4])) + (d[4] << 56)
    dig_bad = int(np.count_nonzero(recon != y)) + int(np.max(np.abs(d[4])) > 65)
    tmax = 0
    for m in MODULI:
        if m == 256:
            continue
        c = [sym_int(1 << (14 * p), m) for p in range(5)]
        tt = d[0] + sum(d[p] * c[p] for p in range(1, 5))
        dig_bad += int(np.count_nonzero(sym_mod(tt, m) != sym_mod(y, m)))
        tmax = max(tmax, int(np.max(np.abs(tt))))
    res["digit_mismatches"] = dig_bad
    res["digit_t_max_log2"] = math.log2(tmax)
    # 3. int32 reader: hi = ((C >> 15) + 1) >> 1, t = C + hi·(c16 - 65536) (mod 2^32).
    C = rng.integers(-(2**31), 2**31, size=200000, dtype=np.int64)
    C = np.concatenate([C, np.array([-(2**31), 2**31 - 1, 2**31 - 2**14, -(2**15), 2**15 - 1])])
    hi = ((C >> 15) + 1) >> 1
    rd_bad = 0
    for m in MODULI:
        if m == 256:
            continue
        c16 = sym_int(1 << 16, m)
        tt = (C + hi * (c16 - 65536) + 2**31) % 2**32 - 2**31  # int32 wrap
        rd_bad += int(np.count_nonzero((tt < -(2**22)) | (tt >= 2**22)))
        rd_bad += int(np.count_nonzero(sym_mod(tt, m) != sym_mod(C, m)))
    res["int32_reader_mismatches"] = rd_bad
    # 4. quotient from the limbs of S' = sum (r_l + 128) w_l (kernel order, float64).
    q_bad = 0
    for L in (2, 8, 15, 20):
        moduli = MODULI[:L]
        W, _, _ = crt_constants(moduli)
        Mprod = math.prod(moduli)
        inv_m = float(Fraction(1, Mprod))
        nl = W.shape[1]
        rp = rng.integers(0, 256, size=(20000, L), dtype=np.int64)
        rp[:5] = 0
        rp[5:10] = 255
        acc = [(rp * W[:, t][None, :]).sum(axis=1) for t in range(nl)]
        for t in range(nl - 1):
            acc[t + 1] += acc[t] >> 32
            acc[t] &= MASK32
        s = np.zeros(len(rp))
        for t in range(nl - 1, -1, -1):
            s = s + acc[t].astype(np.float64) * 2.0 ** (32 * t)
        q = np.rint((s - 128.0) * inv_m).astype(np.int64)
        w = [sum(int(W[li, t]) << (32 * t) for t in range(nl)) for li in range(L)]
        Mb = (Mprod * ((1 << 19) - 1)) >> 20
        for row, qq in zip(rp.tolist(), q.tolist(), strict=True):
            X = sum(r * wl for r, wl in zip(row, w, strict=True)) - 128  # S' - 128
            qe = (2 * X + Mprod) // (2 * Mprod)
            if abs(X - qe * Mprod) <= Mb and qe != qq:
                q_bad += 1
    res["quotient_mismatches"] = q_bad
    res["ok"] = bad == 0 and dig_bad == 0 and rd_bad == 0 and q_bad == 0
    return res


# ---------------------------------------------------------------------------------- main


def _sizes(text: str) -> list[int]:
    """``--sizes`` / ``--time-sizes``: comma-separated positive integers."""
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive integers, got {text!r}"
        )
    return sizes


def _gemms(text: str) -> list[str]:
    """``--gemm``: comma-separated INT8 GEMM paths of ``ozaki2_cuda``."""
    gemms = [g for g in text.split(",") if g]
    if not gemms or any(g not in ("cublas", "fused") for g in gemms):
        raise argparse.ArgumentTypeError(f"expected cublas, fused or cublas,fused, got {text!r}")
    return gemms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m precision.gemm.ozaki_cuda_check", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--cpu", action="store_true", help="only the CPU checks (no GPU)")
    ap.add_argument("--host", action="store_true", help="with --cpu: replay the kernels on the CPU")
    ap.add_argument(
        "--sizes",
        type=_sizes,
        default="16,100,257,1024",
        help="sizes n of the GPU checks, comma-separated (default 16,100,257,1024)",
    )
    ap.add_argument(
        "--time-sizes",
        type=_sizes,
        default="8192,16384",
        help="sizes n of the GPU timings, comma-separated (default 8192,16384)",
    )
    ap.add_argument(
        "--gemm",
        type=_gemms,
        default="cublas",
        help="INT8 GEMM paths: cublas, fused or cublas,fused (default cublas)",
    )
    args = ap.parse_args(argv)
    if not args.cpu:  # before the CPU checks, which the GPU part would otherwise follow
        from precision.gpu import exit_without_gpu

        if exit_without_gpu(
            "python -m precision.gemm.ozaki_cuda_check", "--cpu [--host] runs the CPU checks alone"
        ):
            return 2
    report: dict[str, Any] = {}
    t0 = time.time()
    report["cpu"] = cpu_checks()
    print("cpu arithmetic checks:", json.dumps(report["cpu"]), f"({time.time() - t0:.1f} s)")
    ok = bool(report["cpu"]["ok"])
    if args.host:
        report["host_residues"] = host_residues()
        ok &= report["host_residues"]["ok"]
        print("host residues:", json.dumps(report["host_residues"]), flush=True)
        report["host_rounding"] = host_rounding()
        ok &= report["host_rounding"]["ok"]
        print("host rounding:", json.dumps(report["host_rounding"]), flush=True)
        report["host"] = []
        for n, phi, target, L, specials in (
            (16, 4.0, "fp32", 8, False), (100, 4.0, "fp64", 15, False),
            (257, 1.0, "fp64", 15, True), (257, 1.0, "fp32", 8, True),
            (100, 0.0, "fp64", 20, False), (64, 1.0, "fp64", 2, False),
            (100, 1.0, "fp32", 5, False), (257, 4.0, "fp64", 15, False),
            (100, 1.0, "fp64", 16, False), (64, 2.0, "fp64", 11, False),
            (64, 0.5, "fp64", 10, False),
        ):  # fmt: skip
            r = host_case(n, phi, target, L, specials)
            report["host"].append(r)
            ok &= r["ok"]
            print("host replay:", json.dumps(r), flush=True)
        report["host_barriers"] = host_barriers()
        ok &= report["host_barriers"]["ok"]
        print("host fiber barriers:", json.dumps(report["host_barriers"]), flush=True)
        report["host_auto_terms"] = host_auto_terms()
        ok &= report["host_auto_terms"]["ok"]
        print("host auto terms (oz2_auto_need):", json.dumps(report["host_auto_terms"]), flush=True)
        report["host_pipeline"] = host_pipeline()
        for r in report["host_pipeline"]:
            ok &= r["ok"]
            print("host pipeline (ozaki2_cuda on the CPU):", json.dumps(r), flush=True)
        # the cases must reach several blocks of A's rows and of B's columns on both paths
        for what in ("row_blocks", "blocks"):
            several = {r["gemm"] for r in report["host_pipeline"] if r[what] > 1}
            missing = {"cublas", "fused"} - several
            if missing:
                ok = False
                print(f"host pipeline: no case with several {what} on {sorted(missing)}")
    if not args.cpu:
        from precision.gpu import require_gpu

        cp = require_gpu("ozaki_cuda_check")
        gemms = args.gemm
        cases: list[tuple[int, float, str, int | str, bool, str]] = []
        for gemm in gemms:
            for n in args.sizes:
                for phi in (0.0, 1.0, 4.0):
                    for target, nmod in (("fp64", 15), ("fp32", 8)):
                        cases.append((n, phi, target, nmod, False, gemm))
            cases += [(257, 1.0, "fp64", 15, True, gemm), (257, 1.0, "fp32", 8, True, gemm),
                      (100, 4.0, "fp64", "auto", False, gemm)]  # fmt: skip
        report["cases"] = []
        for n, phi, target, terms, specials, gemm in cases:
            t1 = time.time()
            r = check_case(cp, n, phi, target, terms, specials, gemm)
            report["cases"].append(r)
            ok &= r["ok"]
            print(
                f"{gemm:6s} n={n:5d} phi={phi:3.1f} {target} L={r['L']:2d} specials={specials!s:5s}"
                f" q2={r['q2']} |T|/Mb={r['t_over_mb']:.3g} D-diff={r['d_diff']} "
                f"stats-diff={r['stat_diff']} res-diff={r['res_diff']} crt-bad={r['crt_bad']} "
                f"{'OK' if r['ok'] else 'FAIL'} ({time.time() - t1:.1f} s)",
                flush=True,
            )
        report["timing"] = []
        for gemm in gemms:
            for n in args.time_sizes:
                r = time_case(cp, n, 15, gemm)
                report["timing"].append(r)
                ph = " ".join(f"{k}={v:.3f}" for k, v in r["phase_ms"].items())
                print(
                    f"timing {gemm} n={n} L=15 fp64: {ph} | total {r['total_ms']:.3f} ms, "
                    f"DGEMM {r['dgemm_ms']:.3f} ms, x{r['speedup_vs_dgemm']:.2f}, "
                    f"{r['tflops']:.1f} TFLOP/s, nb={r['nb']}, ws={r['workspace_gb']:.2f} GB",
                    flush=True,
                )
    report["ok"] = ok
    print("ALL OK" if ok else "FAILURES")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "ozaki_cuda_check.json"), "w") as fh:
            json.dump(report, fh, indent=1, default=str)
    return 0 if ok else 1


if __name__ == "__main__":
    run_main(main)
