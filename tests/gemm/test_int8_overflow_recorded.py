"""The int8 GEMM kernels past int32's range, against their recording (tests/data/gemm/
int8_overflow_h100.npz, see the README there) and against exact integer arithmetic.

The recorded GEMM cases of tests/data/gemm never take a partial sum past 2^31, so they cannot
tell ``.satfinite``'s clamp from wrap-around; these inputs do (163,840 products of ±16,129).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision.gemm.emulator import run_schedule
from precision.gemm.schedule import all_schedules

DATA = Path(__file__).parents[1] / "data" / "gemm" / "int8_overflow_h100.npz"
M = N = 16
K = 163_840
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def inputs() -> tuple[np.ndarray, np.ndarray]:
    """The recorded inputs (README): rows of A positive up to 131072 + 2048 i, columns of B
    positive up to 163840 - 8192 j, then negative; every entry ±127."""
    k = np.arange(K)
    A = np.where(k[None, :] < (131072 + 2048 * np.arange(M))[:, None], 127.0, -127.0)
    B = np.where(k[:, None] < (K - 8192 * np.arange(N))[None, :], 127.0, -127.0)
    return A.astype(np.float32), B.astype(np.float32)


@pytest.fixture(scope="module")
def recorded() -> dict[str, np.ndarray]:
    with np.load(DATA) as z:
        return {m: z[f"D_{m}"] for m in ("satf", "plain")}


@pytest.fixture(scope="module")
def oracles() -> dict[str, np.ndarray]:
    """Exact integer arithmetic: plain wraps the exact sum modulo 2^32; satf adds the sum of
    each instruction's 32 products in increasing k and clamps after each (.satfinite)."""
    A, B = (x.astype(np.int64) for x in inputs())
    exact = A @ B
    acc = np.zeros((M, N), np.int64)
    for block in np.einsum("ibk,bkj->bij", A.reshape(M, -1, 32), B.reshape(-1, 32, N)):
        acc = np.clip(acc + block, I32_MIN, I32_MAX)
    wrapped = (exact - I32_MIN) % 2**32 + I32_MIN
    return {"satf": acc, "plain": wrapped, "clamped_once": np.clip(exact, I32_MIN, I32_MAX)}


def test_the_recording_decides_clamp_per_instruction_and_wrap(recorded, oracles):
    for method in ("satf", "plain"):
        assert recorded[method].dtype == np.float32 and recorded[method].shape == (M, N)
        assert np.array_equal(recorded[method], oracles[method].astype(np.float32)), method
    # the inputs tell the three rules apart: wrap, clamp per instruction, clamp at the end
    assert np.count_nonzero(recorded["satf"] != recorded["plain"]) == 71
    assert np.count_nonzero(recorded["satf"] != oracles["clamped_once"].astype(np.float32)) == 29
    assert np.count_nonzero(recorded["satf"] == np.float32(I32_MAX)) > 0


@pytest.mark.parametrize("method", ["satf", "plain"])
def test_emulator_replays_the_recording_bit_for_bit(recorded, method):
    schedule = next(s for s in all_schedules() if s.kernel == f"gemm_{method}_int8")
    got = run_schedule(*inputs(), schedule)
    assert np.array_equal(got.view(np.uint32), recorded[method].view(np.uint32)), method
