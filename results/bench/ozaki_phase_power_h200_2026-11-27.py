"""Experiment (2026-11-27, issue #17): board power and SM clock of each Ozaki-II phase alone,
and a two-stream pipeline that overlaps B's residues and the reconstruction with the INT8
GEMMs.

Question: at n = 8192 the split, statistics and reconstruction take about 2.9 ms of a
14-15 ms call at the 700 W cap. If those phases draw well under the cap when they run alone,
running them beside the GEMMs (which are power-bound) could hide part of their time; if they
draw as much as the GEMMs, overlap cannot help and only fewer instructions can.

Run on the GPU machine from the repository root:
    PYTHONPATH=$PWD python results/bench/ozaki_phase_power_h200_2026-11-27.py [seconds]
Prints one line per measurement; nothing is written. Exp_rand inputs, phi = 0.5, n = 8192.
"""

from __future__ import annotations

import sys
import time

import cupy as cp
import numpy as np

from precision.gemm.ozaki import make_plan
from precision.gemm.ozaki_cuda import (
    PAD,
    ROWS_FUSED_MAX_KP,
    TARGETS,
    _blocks,
    _kernel,
    _set_constants,
    device_line_stats,
    ozaki2_cuda,
    residues_cols,
    round_up,
    rows_fused,
    specials_if_bad,
)
from precision.gemm.ozaki_gemm_launch import gemm_mod
from precision.telemetry import summarize, time_gpu_sampled

SUSTAIN = float(sys.argv[1]) if len(sys.argv) > 1 else 2.5
N = 8192


def line(name: str, fn, flops: float | None = None) -> float:
    """Burst (median of 5) and sustained (>= SUSTAIN s) time of fn, with power and clock."""
    burst, _ = time_gpu_sampled(fn, repeats=5, warmup=2)
    sus, samples = time_gpu_sampled(fn, repeats=3, warmup=0, min_seconds=SUSTAIN)
    t_b, t_s = float(np.median(burst)), float(np.median(sus))
    tele = summarize(samples, t_s, flops)
    print(
        f"{name:34s} burst {t_b * 1e3:8.3f} ms  sustained {t_s * 1e3:8.3f} ms  "
        f"power {tele['power_w']:6.1f} W  sm {tele['sm_clock_mhz']:6.0f} MHz  "
        f"capped {tele['power_capped_frac']:.2f}  samples {len(samples)}",
        flush=True,
    )
    return t_s


def state(A, B, terms: int, nb: int | None = None):
    """The buffers and statistics of one fused-path call, prepared as ozaki2_cuda does."""
    M, K = A.shape
    Nc = B.shape[1]
    plan = make_plan("ozaki2", "int8", "fp64", terms, K)
    nl = _set_constants(plan.moduli)
    pad = PAD["fused"]
    kp = round_up(K, pad)
    assert kp <= ROWS_FUSED_MAX_KP
    L = plan.terms
    mp = round_up(M, pad)
    if nb is None:
        budget = int(1.5 * 8 * (A.size + B.size)) - L * mp * kp
        nb = max(pad, budget // (L * kp + L * mp))
        nb = nb // 256 * 256
        nb = max(pad, min(nb, round_up(Nc, pad)))
    bad_all = cp.zeros(M + Nc, dtype=cp.int32)
    ares = cp.empty((L, mp, kp), dtype=cp.int8)
    dsa = rows_fused(cp, A, plan.q2, L, mp, kp, ares, bad_all[:M])
    dsb = device_line_stats(cp, B, 0, plan.q2, bad_all[M:])
    p, emin_sub, dtype = TARGETS["fp64"]
    recon = _kernel(f"oz2_recon_i8_nl{nl}_f64")
    return dict(plan=plan, L=L, mp=mp, kp=kp, nb=nb, ares=ares, dsa=dsa, dsb=dsb,
                bad_all=bad_all, p=p, emin_sub=emin_sub, dtype=dtype, recon=recon)  # fmt: skip


def overlapped(A, B, terms: int, nb: int, prio: bool = True):
    """ozaki2_cuda's fused path with two streams: B's residues of block b+1 and the
    reconstruction of block b run on a side stream while the GEMMs of block b (b+1) run on the
    main stream; two buffers each for B's residues and the residue planes of the products.
    Same kernels, same arguments, so the same bits."""
    M, K = A.shape
    Nc = B.shape[1]
    main = cp.cuda.get_current_stream()
    side = cp.cuda.Stream(non_blocking=True, priority=-5 if prio else 0)
    st = state(A, B, terms, nb)
    L, mp, kp, plan = st["L"], st["mp"], st["kp"], st["plan"]
    pad = PAD["fused"]
    bres = [cp.empty((L, nb, kp), dtype=cp.int8) for _ in range(2)]
    C = [cp.empty((L, mp, nb), dtype=cp.int8) for _ in range(2)]
    D = cp.empty((M, Nc), dtype=st["dtype"])
    ready = cp.cuda.Event(disable_timing=True)
    ready.record(main)
    side.wait_event(ready)  # statistics and A's residues are done
    blocks = list(range(0, Nc, nb))
    res_done = [None] * len(blocks)
    gemm_done = [None] * len(blocks)
    rec_done = [None] * len(blocks)

    def res(i: int) -> None:
        c0 = blocks[i]
        nbc = min(nb, Nc - c0)
        nbp = round_up(nbc, pad)
        buf = bres[i % 2].reshape(-1)[: L * nbp * kp].reshape(L, nbp, kp)
        if i >= 2:
            side.wait_event(gemm_done[i - 2])  # the GEMM that read this buffer is done
        with side:
            residues_cols(cp, B, st["dsb"].shift, L, c0, nbc, nbp, kp, buf)
            ev = cp.cuda.Event(disable_timing=True)
            ev.record(side)
        res_done[i] = ev

    res(0)
    for i, c0 in enumerate(blocks):
        nbc = min(nb, Nc - c0)
        nbp = round_up(nbc, pad)
        buf = bres[i % 2].reshape(-1)[: L * nbp * kp].reshape(L, nbp, kp)
        cblk = C[i % 2].reshape(-1)[: L * mp * nbp].reshape(L, mp, nbp)
        main.wait_event(res_done[i])
        if i >= 2:
            main.wait_event(rec_done[i - 2])  # the reconstruction that read cblk is done
        gemm_mod(cp, st["ares"], buf, cblk, mp, nbp, kp, L, plan.moduli)
        ev = cp.cuda.Event(disable_timing=True)
        ev.record(main)
        gemm_done[i] = ev
        if i + 1 < len(blocks):
            res(i + 1)
        side.wait_event(ev)
        with side:
            st["recon"](
                (_blocks(M * (nbp // 4)),),
                (256,),
                (cblk, np.int32(M), np.int32(mp), np.int32(nbc), np.int32(nbp), np.int32(L),
                 st["dsa"].shift, st["dsb"].shift, np.int32(c0), np.int32(Nc), np.int32(st["p"]),
                 np.int32(st["emin_sub"]), D),
            )  # fmt: skip
            ev2 = cp.cuda.Event(disable_timing=True)
            ev2.record(side)
        rec_done[i] = ev2
    main.wait_event(rec_done[-1])
    specials_if_bad(cp, D, A, B, st["bad_all"], st["dsa"], st["dsb"], "fp64")
    return D


def main() -> None:
    dev = cp.cuda.Device()
    print("device", cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode(), flush=True)
    cp.random.seed(N)
    A = (cp.random.random((N, N)) - 0.5) * cp.exp(0.5 * cp.random.standard_normal((N, N)))
    B = (cp.random.random((N, N)) - 0.5) * cp.exp(0.5 * cp.random.standard_normal((N, N)))
    flops = 2.0 * N**3
    t0 = time.time()
    for terms in (15, 14):
        ref, run = ozaki2_cuda(A, B, target="fp64", terms=terms, gemm="fused")
        print(f"terms {terms}: column block {run.nb}, compile+first call {time.time() - t0:.1f} s",
              flush=True)  # fmt: skip
        for nb in (run.nb, 2048, 1024):
            got = overlapped(A, B, terms, nb)
            same = bool(cp.all(got.view(cp.int64) == ref.view(cp.int64)))
            print(f"  overlapped nb={nb}: bit-identical to ozaki2_cuda: {same}", flush=True)
    print("--- each phase alone, back to back (terms 15, first column block)", flush=True)
    st = state(A, B, 15)
    L, mp, kp, nb = st["L"], st["mp"], st["kp"], st["nb"]
    bad = st["bad_all"]
    buf = cp.empty((L, nb, kp), dtype=cp.int8)
    cblk = cp.empty((L, mp, nb), dtype=cp.int8)
    D = cp.empty((N, N), dtype=cp.float64)
    line("rows_fused (A: stats+residues)",
         lambda: rows_fused(cp, A, st["plan"].q2, L, mp, kp, st["ares"], bad[:N]))  # fmt: skip
    line("stats_cols (B)", lambda: device_line_stats(cp, B, 0, st["plan"].q2, bad[N:]))
    line(f"residues_cols (B, {nb} cols)",
         lambda: residues_cols(cp, B, st["dsb"].shift, L, 0, nb, nb, kp, buf))  # fmt: skip
    residues_cols(cp, B, st["dsb"].shift, L, 0, nb, nb, kp, buf)
    line(f"gemm_mod ({nb} cols)",
         lambda: gemm_mod(cp, st["ares"], buf, cblk, mp, nb, kp, L, st["plan"].moduli),
         2.0 * N * nb * N * L)  # fmt: skip
    gemm_mod(cp, st["ares"], buf, cblk, mp, nb, kp, L, st["plan"].moduli)
    line(f"recon ({nb} cols)", lambda: st["recon"](
        (_blocks(N * (nb // 4)),), (256,),
        (cblk, np.int32(N), np.int32(mp), np.int32(nb), np.int32(nb), np.int32(L),
         st["dsa"].shift, st["dsb"].shift, np.int32(0), np.int32(N), np.int32(st["p"]),
         np.int32(st["emin_sub"]), D)))  # fmt: skip
    st = buf = cblk = D = None  # free the buffers
    cp.get_default_memory_pool().free_all_blocks()
    print("--- whole calls (alternating rounds)", flush=True)
    for rnd in range(2):
        line(f"[{rnd}] DGEMM", lambda: A @ B, flops)
        for terms in (15, 14):
            line(f"[{rnd}] ozaki2 {terms} serial",
                 lambda t=terms: ozaki2_cuda(A, B, target="fp64", terms=t, gemm="fused"),
                 flops)  # fmt: skip
            for nb in (2048, 1024):
                line(f"[{rnd}] ozaki2 {terms} overlap nb={nb}",
                     lambda t=terms, b=nb: overlapped(A, B, t, b), flops)  # fmt: skip
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
