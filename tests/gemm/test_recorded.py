"""Recorded H200 outputs of every CUDA GEMM kernel, re-checked bit for bit by the emulator.

tests/data/gemm/cuda_cases_sm90.npz was written on an H200 by
``python -m precision.gemm.record record`` (see tests/data/gemm/README.md): full inputs and
outputs as bits for n in {16, 100}; SHA-256 of inputs/outputs plus four rows for n in
{257, 1024} (inputs are regenerated from their seeds and checked against the hashes).

The default run checks every record bit for bit: the full ones element by element, the hashed
ones on their recorded rows (the emulator computes just those rows; about a minute in all on
2 cores). The full replay of the hashed cases (whole outputs against their SHA-256, many
minutes) runs with ``PRECISION_FULL_REPLAY=1`` or as
``python -m precision.gemm.record verify tests/data/gemm/cuda_cases_sm90.npz``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from precision.gemm.record import compare, main, verify

DATA = Path(__file__).parents[1] / "data" / "gemm" / "cuda_cases_sm90.npz"


def _sizes() -> list[int]:
    names = np.load(DATA).files if DATA.exists() else []
    return sorted({int(n.split("/")[0][1:]) for n in names})


def test_recording_is_present_with_the_sizes_checked_below():
    """The recording is committed: its absence fails (it used to skip this whole module), and
    the sizes parametrised below are exactly those it holds."""
    assert DATA.exists(), f"{DATA} is missing"
    assert _sizes() == [16, 100, 257, 1024]


def _check(n: int, *, rows_only: bool = False) -> None:
    rows = verify(str(DATA), n=n, rows_only=rows_only)
    assert rows, f"no records for n={n}"
    bad = [r for r in rows if not r["identical"]]
    assert not bad, f"{len(bad)} of {len(rows)} kernel outputs differ from the emulator: {bad[:5]}"


def test_recording_covers_every_kernel():
    from precision.gemm import all_schedules

    names = set(np.load(DATA).files)
    for s in all_schedules():
        for n in (16, 100):
            assert f"n{n}/uniform/{s.kernel}/D" in names
        assert f"n1024/exp_rand2/{s.kernel}/sha_D" in names


@pytest.mark.parametrize("n", [16, 100])
def test_small_cases_bit_identical(n):
    _check(n)


@pytest.mark.parametrize("n", [257, 1024])
def test_large_cases_bit_identical_on_their_recorded_rows(n):
    _check(n, rows_only=True)


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("PRECISION_FULL_REPLAY") != "1",
    reason="full replay of the hashed cases: set PRECISION_FULL_REPLAY=1 (many minutes)",
)
@pytest.mark.parametrize("n", [257, 1024])
def test_large_cases_bit_identical(n):
    _check(n)


def test_compare_reports_changed_missing_and_extra_arrays(tmp_path, capsys):
    """``record compare``: arrays with the same bits, with different bits (one flipped bit)
    and present in one recording only are told apart; any difference makes the exit code 1."""
    d = np.arange(12, dtype=np.uint32).reshape(3, 4)
    flipped = d.copy()
    flipped[1, 2] ^= 1
    old, new = tmp_path / "old.npz", tmp_path / "new.npz"
    np.savez(old, **{"n3/u/k1/D": d, "n3/u/k2/D": d, "n3/u/gone/D": d})
    np.savez(new, **{"n3/u/k1/D": d, "n3/u/k2/D": flipped, "n3/u/added/D": d})
    result = compare(str(new), str(old))
    assert result == {
        "identical": ["n3/u/k1/D"],
        "different": ["n3/u/k2/D"],
        "only_new": ["n3/u/added/D"],
        "only_old": ["n3/u/gone/D"],
    }
    assert main(["compare", str(new), str(old)]) == 1
    assert "different n3/u/k2/D" in capsys.readouterr().out
    assert main(["compare", str(old), str(old)]) == 0


def test_rows_only_verify_catches_a_flipped_bit_in_a_hashed_record(tmp_path, capsys):
    """A hashed record whose stored row has one bit flipped is reported as DIFFERENT by the
    rows-only check (the default test run's) and by the full replay, with progress lines."""
    from precision.gemm.emulator import run_schedule
    from precision.gemm.record import _sha, case_inputs, kernel_inputs, sample_rows
    from precision.gemm.schedule import get_schedule

    n, s = 16, get_schedule("plain", "e4m3")
    A, B = case_inputs(n, "uniform")
    D = run_schedule(*kernel_inputs(A, B, s), s)  # the mechanism under test, not a bit claim
    rows = D[sample_rows(n)].view(np.uint32).copy()
    rows[1, 3] ^= 1
    path = tmp_path / "rec.npz"
    key = f"n{n}/uniform"
    np.savez(
        path,
        **{
            f"{key}/sha_A": np.array(_sha(A)),
            f"{key}/sha_B": np.array(_sha(B)),
            f"{key}/{s.kernel}/sha_D": np.array(_sha(D)),
            f"{key}/{s.kernel}/rows": rows,
        },
    )
    for rows_only in (True, False):
        (r,) = verify(str(path), rows_only=rows_only)
        assert (r["identical"], r["mismatches"]) == (False, 1), (rows_only, r)
    assert main(["verify", str(path), "--rows-only"]) == 1
    out = capsys.readouterr().out
    assert "verifying 1 record(s)" in out and "[  1/1" in out and "DIFFERENT (1, rows)" in out
