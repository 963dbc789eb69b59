"""The CUDA scheme II backend's blocks (``cuda_blocks``): the workspace limit in the inputs' own
size, and the blocks of the H200 run of record kept as they were. Pure arithmetic, no GPU."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from precision.gemm.ozaki_cuda import PAD, ROW_SPLIT_NB, cuda_blocks, round_up

RUN_OF_RECORD = Path(__file__).parents[2] / "results/bench/ozaki_h200_2026-11-28.csv"


def workspace(M: int, N: int, K: int, L: int, gemm: str, mb: int, nb: int) -> int:
    """Bytes that ozaki2_cuda allocates for these blocks: A's and B's int8 residues and the
    product planes (int32 for cuBLAS, int8 for the fused GEMM)."""
    kp = round_up(K, PAD[gemm])
    mbp = mb if gemm == "cublas" else round_up(mb, PAD["fused"])
    return L * mbp * kp + L * nb * kp + (4 if gemm == "cublas" else 1) * L * mbp * nb


def test_the_column_blocks_of_the_run_of_record_are_kept() -> None:
    """Float64 inputs at n = 8192 and 16384 keep one block of rows and the column block the
    H200 measured with (``col_block``), so its speed and identity results still apply."""
    runs = pd.read_csv(RUN_OF_RECORD)
    rows = runs[(runs.method == "ozaki2") & runs.col_block.notna() & (runs.terms != "auto")]
    assert len(rows) >= 14
    for r in rows.itertuples():
        n, L = int(r.n), int(r.terms)
        got = cuda_blocks(n, n, round_up(n, PAD[r.gemm]), L, r.gemm, int(1.5 * 8 * 2 * n * n))
        assert got == (n, int(r.col_block)), r


@pytest.mark.parametrize("gemm", ["fused", "cublas"])
@pytest.mark.parametrize("itemsize", [8, 4])
def test_the_workspace_stays_within_the_budget(gemm: str, itemsize: int) -> None:
    """For every shape whose smallest blocks fit (128 rows against one padded column block),
    the workspace is within 1.5x the inputs' own size (or half the float64 output, thin K);
    row blocks are M or a multiple of 128 rows (16-byte aligned views of A)."""
    sizes = (1, 7, 100, 129, 1000, 4096, 8192, 20000)
    checked = 0
    for M in sizes:
        for N in sizes:
            for K in sizes:
                for L in (7, 8, 15, 16, 20):
                    budget = max(int(1.5 * itemsize * (M * K + K * N)), 4 * M * N)
                    kp = round_up(K, PAD[gemm])
                    mb, nb = cuda_blocks(M, N, kp, L, gemm, budget)
                    assert mb == M or (mb % 128 == 0 and mb < M), (M, N, K, L, mb)
                    assert nb % PAD[gemm] == 0 and 0 < nb <= round_up(N, PAD[gemm])
                    smallest = workspace(M, N, K, L, gemm, min(M, 128), PAD[gemm])
                    if smallest <= budget:
                        assert workspace(M, N, K, L, gemm, mb, nb) <= budget, (M, N, K, L)
                        checked += 1
                    else:  # padding outgrows the budget: the smallest blocks
                        assert mb <= 128 and nb == PAD[gemm], (M, N, K, L, mb, nb)
    assert checked > 1500


def test_float32_inputs_split_the_rows_of_a() -> None:
    """At n = 8192, 15 moduli: A's residues (15 n² bytes) outgrow 1.5x the float32 inputs
    (12 n²), so A is taken in two blocks of rows; the total stays within 1.5x."""
    n, L = 8192, 15
    budget = int(1.5 * 4 * 2 * n * n)
    mb, nb = cuda_blocks(n, n, n, L, "fused", budget)
    assert (mb, nb >= ROW_SPLIT_NB) == (n // 2, True)
    assert workspace(n, n, n, L, "fused", mb, nb) <= budget
