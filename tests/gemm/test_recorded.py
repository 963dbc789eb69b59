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
    from precision.gemm.record import array_sha256, case_inputs, kernel_inputs, sample_rows
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
            f"{key}/sha_A": np.array(array_sha256(A)),
            f"{key}/sha_B": np.array(array_sha256(B)),
            f"{key}/{s.kernel}/sha_D": np.array(array_sha256(D)),
            f"{key}/{s.kernel}/rows": rows,
        },
    )
    for rows_only in (True, False):
        (r,) = verify(str(path), rows_only=rows_only)
        assert (r["identical"], r["mismatches"]) == (False, 1), (rows_only, r)
    assert main(["verify", str(path), "--rows-only"]) == 1
    out = capsys.readouterr().out
    assert "verifying 1 record(s)" in out and "[  1/1" in out and "DIFFERENT (1, rows)" in out


def _small_recording(tmp_path, change=None, name: str = "rec.npz"):  # noqa: ANN001, ANN202
    """One full record of the committed file (n = 16, uniform, e4m3 plain) as its own .npz,
    its arrays first passed to ``change``."""
    key = "n16/uniform"
    with np.load(DATA) as z:
        arrays = {k: z[k] for k in (f"{key}/A", f"{key}/B", f"{key}/gemm_plain_e4m3/D")}
    if change is not None:
        change(arrays)
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


def _one_error_line(capsys) -> str:  # noqa: ANN001
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_verify_counts_a_flipped_bit_of_a_full_record_exactly(tmp_path, capsys):
    def flip(z: dict) -> None:
        d = z["n16/uniform/gemm_plain_e4m3/D"].copy()
        d[3, 5] ^= np.uint32(1 << 7)
        z["n16/uniform/gemm_plain_e4m3/D"] = d

    assert main(["verify", str(_small_recording(tmp_path))]) == 0
    assert "0 record(s) differ" in capsys.readouterr().out
    (r,) = verify(str(_small_recording(tmp_path, flip)))
    assert (r["identical"], r["mismatches"], r["checked"]) == (False, 1, "all")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            lambda z: z.__setitem__(
                "n16/uniform/gemm_plain_e4m3/D", z["n16/uniform/gemm_plain_e4m3/D"].astype(np.int64)
            ),
            ["n16/uniform/gemm_plain_e4m3/D", "uint32(16, 16)", "int64"],
        ),
        (
            lambda z: z.__setitem__(
                "n16/uniform/gemm_plain_e4m3/D", z["n16/uniform/gemm_plain_e4m3/D"][:8]
            ),
            ["n16/uniform/gemm_plain_e4m3/D", "uint32(8, 16)"],
        ),
        (lambda z: z.__setitem__("nXX/uniform/gemm_plain_e4m3/D", z["n16/uniform/A"]), ["nXX"]),
        (
            lambda z: z.__setitem__("n16/uniform/no_such_kernel/D", z["n16/uniform/A"]),
            ["no_such_kernel"],
        ),
        (lambda z: z.__setitem__("n16/odd/gemm_plain_e4m3/sha_D", np.array("0")), ["'odd'"]),
        (lambda z: z.clear(), ["no records"]),
    ],
    ids=["D-int64", "D-short", "bad-size", "unknown-kernel", "unknown-case", "empty"],
)
def test_verify_of_a_damaged_recording_is_one_error_line(change, words, tmp_path, capsys):
    """Before: an int64 copy of the output bits verified as identical, an archive without
    records (or a --kernel matching none) as "0 record(s) differ" with exit 0, a size that is
    no integer was a traceback and an unknown case a bare StopIteration message."""
    path = _small_recording(tmp_path, change)
    assert main(["verify", str(path)]) == 2
    line = _one_error_line(capsys)
    assert str(path) in line
    for w in words:
        assert w in line, line


def test_verify_with_a_kernel_filter_that_matches_nothing_is_an_error(tmp_path, capsys):
    path = _small_recording(tmp_path)
    assert main(["verify", str(path), "--kernel", "gemm_plain_e4m"]) == 2
    assert "no records chosen by --max-n/--kernel" in _one_error_line(capsys)


def test_verify_and_compare_name_a_corrupt_array(tmp_path, capsys):
    """A zip member whose bytes are damaged (a CRC error on reading) used to be a traceback."""
    good = _small_recording(tmp_path, name="good.npz")
    bad = tmp_path / "bad.npz"
    data = bytearray(good.read_bytes())
    at = data.index(b"\x93NUMPY", data.index(b"gemm_plain_e4m3/D.npy")) + 200  # in D's bits
    data[at : at + 16] = bytes(b ^ 0xFF for b in data[at : at + 16])
    bad.write_bytes(bytes(data))
    assert main(["verify", str(bad)]) == 2
    line = _one_error_line(capsys)
    assert str(bad) in line and "n16/uniform/gemm_plain_e4m3/D" in line and "unreadable" in line
    assert main(["compare", str(bad), str(good)]) == 2
    line = _one_error_line(capsys)
    assert str(bad) in line and "n16/uniform/gemm_plain_e4m3/D" in line


def test_compare_exits_0_only_when_both_hold_the_same_arrays_bit_for_bit(tmp_path, capsys):
    """Before, an int64 copy of the bits compared identical, and recordings of other sizes or
    a subset of the cases (arrays in one file only, nothing or not all compared) exited 0."""
    full = _small_recording(tmp_path, name="full.npz")

    def widen(z: dict) -> None:
        z["n16/uniform/gemm_plain_e4m3/D"] = z["n16/uniform/gemm_plain_e4m3/D"].astype(np.int64)

    assert compare(str(_small_recording(tmp_path, widen, "wide.npz")), str(full))["different"] == [
        "n16/uniform/gemm_plain_e4m3/D"
    ]
    subset = _small_recording(tmp_path, lambda z: z.pop("n16/uniform/gemm_plain_e4m3/D"), "s.npz")
    assert main(["compare", str(subset), str(full)]) == 1
    assert "only_old  n16/uniform/gemm_plain_e4m3/D" in capsys.readouterr().out
    other = tmp_path / "other.npz"
    np.savez(other, **{"n8/uniform/A": np.zeros((8, 8), np.uint32)})
    assert main(["compare", str(other), str(full)]) == 2
    assert "no array in common" in _one_error_line(capsys)
    assert main(["compare", str(full), str(full)]) == 0


def test_record_refuses_an_existing_file_and_a_name_without_npz(tmp_path, capsys):
    """`record PATH` wrote over any file, the recording CI replays too, and numpy appends
    .npz to a name without it, so the destination checked was not the file written. Both
    are refused first, on any machine (with or without a GPU)."""
    existing = tmp_path / "cases.npz"
    existing.write_bytes(b"the recording CI replays")
    assert main(["record", str(existing)]) == 2
    err = capsys.readouterr().err
    assert f"record {existing}: the file exists; record into a new file, compare it" in err
    assert existing.read_bytes() == b"the recording CI replays"
    assert main(["record", str(tmp_path / "cases")]) == 2
    assert "the file name must end in .npz" in capsys.readouterr().err
    assert not (tmp_path / "cases.npz.npz").exists() and not (tmp_path / "cases").exists()
