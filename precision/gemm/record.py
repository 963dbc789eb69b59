"""Record CUDA GEMM outputs on a GPU and re-check them against the emulator on a CPU.

Cases are (n, distribution) with square n x n x n inputs drawn by
:func:`precision.distributions.make_inputs` from ``numpy.random.default_rng(case_seed)``;
int8 kernels get the same matrices times 64 (exact) so that rounding to int8 is not trivial.

- ``record(path, sizes_full, sizes_hashed)``: on the GPU. For ``sizes_full`` every input and
  output is stored as bits (``.npz``); for ``sizes_hashed`` the SHA-256 of the input and output
  bits and four output rows (``.npz`` too), so that large cases stay small on disk.
- ``compare(new, old)``: two recordings of the same cases (e.g. a rewritten kernel against the
  checked-in one, same schedule): which arrays differ, bit for bit.
- ``verify(path)``: on any machine. Re-creates inputs (checking their hashes), runs the
  emulator backend and compares bit patterns; returns one row per (case, kernel)
  (``iter_verify`` yields them as they finish; ``rows_only`` checks hashed cases on their
  recorded rows only, which the default test run does).

Run as ``python -m precision.gemm.record record OUT.npz``, ``... verify IN.npz`` or
``... compare NEW.npz OLD.npz``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from precision.console import file_destination_problem, run_main
from precision.gemm.schedule import Schedule, all_schedules
from precision.gpu import exit_without_gpu

#: (label, distribution name, parameters) of the recorded input families.
DISTRIBUTIONS: tuple[tuple[str, str, dict], ...] = (
    ("uniform", "uniform", {}),
    ("exp_rand0", "exp_rand", {"phi": 0.0}),
    ("exp_rand1", "exp_rand", {"phi": 1.0}),
    ("exp_rand2", "exp_rand", {"phi": 2.0}),
)
#: Extra cases (label, distribution, parameters, exact power-of-two scale) recorded at the
#: full-record sizes only: uniform(-1, 1) * 2^120 overflows fp32 products and fp16 inputs, so
#: Inf/NaN reach the accumulators (exercises satf and special values).
SPECIAL_CASES: tuple[tuple[str, str, dict, float], ...] = (("huge", "uniform", {}, 2.0**120),)
INT8_INPUT_SCALE = np.float32(64.0)


def case_seed(n: int, label: str) -> int:
    """Deterministic seed of a case (stable across runs and machines)."""
    return int.from_bytes(hashlib.sha256(f"gemm-case/{n}/{label}".encode()).digest()[:4], "little")


def case_inputs(n: int, label: str) -> tuple[np.ndarray, np.ndarray]:
    """fp32 A, B (n x n) of a recorded case."""
    from precision.distributions import make_inputs

    table = [(lab, d, p, 1.0) for lab, d, p in DISTRIBUTIONS] + list(SPECIAL_CASES)
    dist, params, scale = next((d, p, sc) for lab, d, p, sc in table if lab == label)
    rng = np.random.default_rng(case_seed(n, label))
    A, B = make_inputs(dist, n, n, n, rng, **params)
    return A * np.float32(scale), B * np.float32(scale)


def kernel_inputs(A: np.ndarray, B: np.ndarray, s: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """Inputs as given to ``s``'s kernel (int8 kernels: times 64)."""
    if s.fmt == "int8":
        return A * INT8_INPUT_SCALE, B * INT8_INPUT_SCALE
    return A, B


def array_sha256(x: np.ndarray) -> str:
    """Hex SHA-256 of ``x``'s bytes in C order, in its own dtype (byte order included)."""
    return hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()


def sample_rows(n: int) -> np.ndarray:
    """Output rows stored for hashed cases."""
    return np.unique(np.array([0, 1, n // 2, n - 1]))


def _cases(sizes: list[int], special: bool) -> Iterator[tuple[int, str]]:
    for n in sizes:
        for label, _, _ in DISTRIBUTIONS:
            yield n, label
        if special:
            for label, *_ in SPECIAL_CASES:
                yield n, label


def record(path: str, sizes_full: list[int], sizes_hashed: list[int]) -> int:
    """Run every kernel on every case on the GPU and write ``path`` (npz). Returns #records."""
    from precision.gemm.api import cuda_gemm

    data: dict[str, Any] = {}
    count = 0
    for full, sizes in ((True, sizes_full), (False, sizes_hashed)):
        for n, label in _cases(sizes, special=full):
            A, B = case_inputs(n, label)
            key = f"n{n}/{label}"
            if full:
                data[f"{key}/A"] = A.view(np.uint32)
                data[f"{key}/B"] = B.view(np.uint32)
            else:
                data[f"{key}/sha_A"] = np.array(array_sha256(A))
                data[f"{key}/sha_B"] = np.array(array_sha256(B))
            for s in all_schedules():
                Ak, Bk = kernel_inputs(A, B, s)
                D = np.asarray(cuda_gemm(Ak, Bk, s).get(), dtype=np.float32)
                kk = f"{key}/{s.kernel}"
                if full:
                    data[f"{kk}/D"] = D.view(np.uint32)
                else:
                    data[f"{kk}/sha_D"] = np.array(array_sha256(D))
                    data[f"{kk}/rows"] = D[sample_rows(n)].view(np.uint32)
                count += 1
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **data)
    return count


def _schedule_by_kernel() -> dict[str, Schedule]:
    return {s.kernel: s for s in all_schedules()}


#: What a record's key looks like, for error messages.
KEY_FORM = "n<size>/<case>/<kernel>/D or .../sha_D"


def _record_key(name: str) -> tuple[int, str, str, str] | None:
    """``(n, case, kernel, "D" | "sha_D")`` of an output key, None for any other array
    (inputs, hashes, rows); ``ValueError`` for an output key whose size is no integer."""
    parts = name.split("/")
    if len(parts) != 4 or parts[3] not in ("D", "sha_D"):
        return None
    if not (parts[0].startswith("n") and parts[0][1:].isdigit()):
        raise ValueError(f"{name}: not the key of a record (expected {KEY_FORM})")
    return int(parts[0][1:]), parts[1], parts[2], parts[3]


def _array(data: Any, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """``data[name]`` (an ``NpzFile``), checked to be uint32 bits of ``shape`` when given:
    ``ValueError`` naming the array when it is missing, unreadable or of another dtype or
    shape (int64 or float copies of the bits would compare equal by value)."""
    try:
        arr = data[name]
    except KeyError:
        raise ValueError(
            f"{name}: missing (expected a recording written by {PROG} record)"
        ) from None
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as exc:
        what = "zlib.error" if isinstance(exc, zlib.error) else type(exc).__name__
        raise ValueError(f"{name}: unreadable ({what}: {exc})") from None
    if shape is not None and (arr.dtype != np.uint32 or arr.shape != shape):
        raise ValueError(
            f"{name}: expected uint32{shape} output bits, got {arr.dtype.name}{arr.shape}"
        )
    return arr


def verify(
    path: str,
    *,
    max_n: int | None = None,
    kernels: list[str] | None = None,
    rows_only: bool = False,
    n: int | None = None,
) -> list[dict]:
    """Every row of :func:`iter_verify`, as a list."""
    return list(iter_verify(path, max_n=max_n, kernels=kernels, rows_only=rows_only, n=n))


def iter_verify(
    path: str,
    *,
    max_n: int | None = None,
    kernels: list[str] | None = None,
    rows_only: bool = False,
    n: int | None = None,
) -> Iterator[dict]:
    """Compare every record in ``path`` with the emulator backend, yielding one dict per record
    as soon as it is checked: ``n, distribution, kernel, identical`` (bool), ``mismatches``
    (count of differing output bits patterns, or -1 when only the hashes were compared and they
    differ) and ``checked`` (``"all"``: every output element; ``"rows"``: the recorded rows).

    Fully recorded cases (n = 16, 100) are always compared element by element. Hashed cases
    (n = 257, 1024) store the SHA-256 of the whole output plus the rows :func:`sample_rows`:
    by default the emulator computes the whole output and both are compared; with
    ``rows_only`` it computes just those rows (each output row depends only on its row of A
    and on B, in the kernels and in the emulator) and compares them bit for bit, about n / 4
    times faster. Regenerated inputs are always checked against their recorded hashes.
    ``max_n``, ``kernels`` and ``n`` (only this size) select records."""
    from precision.gemm.emulator import run_schedule

    data = np.load(path)
    scheds = _schedule_by_kernel()
    labels = [lab for lab, *_ in DISTRIBUTIONS] + [lab for lab, *_ in SPECIAL_CASES]
    inputs: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # the current case's A, B
    for name in sorted(data.files):
        parsed = _record_key(name)
        if parsed is None:
            continue
        size, label, kernel, what = parsed
        if (max_n is not None and size > max_n) or (kernels and kernel not in kernels):
            continue
        if n is not None and size != n:
            continue
        if kernel not in scheds:
            raise ValueError(
                f"{name}: no kernel {kernel!r} in this version of precision "
                f"(known: {', '.join(sorted(scheds))})"
            )
        key = f"n{size}/{label}"
        if key not in inputs:
            inputs.clear()
            if f"{key}/A" in data.files:
                A = _array(data, f"{key}/A", (size, size)).view(np.float32)
                B = _array(data, f"{key}/B", (size, size)).view(np.float32)
            else:
                if label not in labels:
                    raise ValueError(
                        f"{name}: case {label!r} has neither recorded inputs ({key}/A, {key}/B) "
                        f"nor a known generator (cases: {', '.join(labels)})"
                    )
                A, B = case_inputs(size, label)
                sha_a, sha_b = _array(data, f"{key}/sha_A"), _array(data, f"{key}/sha_B")
                if array_sha256(A) != str(sha_a) or array_sha256(B) != str(sha_b):
                    raise RuntimeError(f"{key}: regenerated inputs differ from the recorded hashes")
            inputs[key] = (A, B)
        A, B = inputs[key]
        s = scheds[kernel]
        checked = "all"
        if what == "D":
            recorded = _array(data, name, (size, size))
            D = run_schedule(*kernel_inputs(A, B, s), s)
            mism = int(np.count_nonzero(D.view(np.uint32) != recorded))
        else:
            rows = sample_rows(size)
            recorded_rows = _array(data, f"{key}/{kernel}/rows", (len(rows), size))
            digest = str(_array(data, name))
            if rows_only:
                D_rows = run_schedule(*kernel_inputs(A[rows], B, s), s)
                mism = int(np.count_nonzero(D_rows.view(np.uint32) != recorded_rows))
                checked = "rows"
            else:
                D = run_schedule(*kernel_inputs(A, B, s), s)
                same = array_sha256(D) == digest
                row_mism = int(np.count_nonzero(D[rows].view(np.uint32) != recorded_rows))
                # the stored rows are checked even when the hash matches (a recording whose
                # rows contradict its hash is reported, not trusted)
                mism = row_mism if row_mism else (0 if same else -1)
        yield {
            "n": size,
            "distribution": label,
            "kernel": kernel,
            "identical": mism == 0,
            "mismatches": mism,
            "checked": checked,
        }


def count_records(path: str, *, max_n: int | None = None, kernels: list[str] | None = None) -> int:
    """Number of records :func:`iter_verify` checks with the same filters."""
    count = 0
    for name in np.load(path).files:
        parsed = _record_key(name)
        if parsed is not None:
            n, _, kernel, _ = parsed
            count += (max_n is None or n <= max_n) and (not kernels or kernel in kernels)
    return count


def compare(new_path: str, old_path: str) -> dict[str, list[str]]:
    """Arrays of two recordings, by outcome: ``identical`` (same bits: same dtype, shape and
    values), ``different`` and ``only_new`` / ``only_old`` (recorded in one file only).
    ``ValueError`` naming the file and array when an array cannot be read."""
    new, old = np.load(new_path), np.load(old_path)
    out: dict[str, list[str]] = {
        "identical": [],
        "different": [],
        "only_new": [],
        "only_old": sorted(set(old.files) - set(new.files)),
    }
    for name in sorted(new.files):
        if name not in old.files:
            out["only_new"].append(name)
            continue
        arrays = []
        for path, data in ((new_path, new), (old_path, old)):
            try:
                arrays.append(_array(data, name))
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from None
        x, y = arrays
        same = x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y)
        out["identical" if same else "different"].append(name)
    return out


PROG = "python -m precision.gemm.record"


def _unreadable(path: str) -> str | None:
    """None if ``path`` is an ``.npz`` archive, else the one-line reason it is not."""
    where = Path(path)
    if not where.exists():
        return f"{path}: no such recording (expected an .npz file written by {PROG} record)"
    if not where.is_file():
        return f"{path}: not a file (expected an .npz file written by {PROG} record)"
    if not zipfile.is_zipfile(path):
        return f"{path}: not an .npz recording (not a zip archive)"
    try:
        with np.load(path) as data:
            data.files  # noqa: B018 -- an .npy file loads as an array, without .files
    except Exception as exc:  # a damaged archive, an .npy file, ...
        return f"{path}: not an .npz recording ({type(exc).__name__}: {exc})"
    return None


def _record_path_problem(path: str) -> str | None:
    """Why ``record`` must not write ``path``, or None: an existing file (it was overwritten,
    ``tests/data/gemm/cuda_cases_sm90.npz`` too) or a name without ``.npz`` (numpy appends
    it, so the file written was not the one checked)."""
    if not path.endswith(".npz"):
        return f"record {path}: the file name must end in .npz (numpy would append it)"
    if Path(path).exists():
        return (
            f"record {path}: the file exists; record into a new file, compare it with "
            f"`{PROG} compare NEW OLD`, then replace the old one deliberately"
        )
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    r = sub.add_parser("record")
    r.add_argument("path")
    r.add_argument("--full", type=int, nargs="*", default=[16, 100])
    r.add_argument("--hashed", type=int, nargs="*", default=[257, 1024])
    v = sub.add_parser("verify")
    v.add_argument("path")
    v.add_argument("--max-n", type=int, default=None)
    v.add_argument("--kernel", action="append", default=None)
    v.add_argument(
        "--rows-only",
        action="store_true",
        help="hashed cases: emulate and compare only the recorded rows (fast)",
    )
    c = sub.add_parser("compare")
    c.add_argument("new")
    c.add_argument("old")
    args = p.parse_args(argv)
    if args.cmd == "record":
        problem = _record_path_problem(args.path)
        if problem:  # (on any machine: it was written over, the recording CI replays too)
            print(f"error: {problem}", file=sys.stderr)
            return 2
        if exit_without_gpu(f"{PROG} record"):
            return 2
        problem = file_destination_problem(args.path, "record")
        if problem:  # before the GPU runs: their outputs would have nowhere to go
            print(f"error: {problem}", file=sys.stderr)
            return 2
        print(f"recorded {record(args.path, args.full, args.hashed)} kernel outputs")
        return 0
    for path in (args.new, args.old) if args.cmd == "compare" else (args.path,):
        problem = _unreadable(path)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    if args.cmd == "compare":
        try:
            result = compare(args.new, args.old)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for outcome in ("different", "only_new", "only_old"):
            for name in result[outcome]:
                print(f"{outcome:9s} {name}")
        print(", ".join(f"{len(v)} {k}" for k, v in result.items()))
        if not result["identical"] and not result["different"]:
            print(
                f"error: {args.new} and {args.old} have no array in common (other sizes, cases "
                "or kernels?): nothing was compared",
                file=sys.stderr,
            )
            return 2
        # exit 0 only when both hold the same arrays with the same bits: an array recorded in
        # one file only (another size, case or kernel) was not checked
        return 1 if result["different"] or result["only_new"] or result["only_old"] else 0
    try:
        total = count_records(args.path, max_n=args.max_n, kernels=args.kernel)
    except ValueError as exc:
        print(f"error: {args.path}: {exc}", file=sys.stderr)
        return 2
    if total == 0:
        chosen = " chosen by --max-n/--kernel" if args.max_n is not None or args.kernel else ""
        print(
            f"error: {args.path}: no records{chosen} (expected keys {KEY_FORM} written by "
            f"{PROG} record; kernels: {', '.join(sorted(_schedule_by_kernel()))})",
            file=sys.stderr,
        )
        return 2
    print(
        f"verifying {total} record(s) of {args.path} against the emulator"
        + (" (hashed cases: recorded rows only)" if args.rows_only else "")
        + "; one line per record as it finishes",
        flush=True,
    )
    bad, start = 0, time.monotonic()
    rows = iter_verify(args.path, max_n=args.max_n, kernels=args.kernel, rows_only=args.rows_only)
    try:
        for i, row in enumerate(rows, 1):
            bad += not row["identical"]
            print(
                f"[{i:3d}/{total} {time.monotonic() - start:7.1f} s] n={row['n']:5d} "
                f"{row['distribution']:10s} {row['kernel']:22s} "
                f"{'identical' if row['identical'] else 'DIFFERENT'} ({row['mismatches']}, "
                f"{row['checked']})",
                flush=True,
            )
    except KeyError as exc:  # the rows above stay printed
        key = exc.args[0] if exc.args else exc
        print(
            f"error: {args.path}: unexpected content ({key}); expected a recording written "
            f"by {PROG} record",
            file=sys.stderr,
        )
        return 2
    except (ValueError, RuntimeError) as exc:
        print(f"error: {args.path}: {exc}", file=sys.stderr)
        return 2
    print(f"{bad} record(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    run_main(main)

__all__ = ["DISTRIBUTIONS", "case_inputs", "compare", "iter_verify", "record", "verify"]
