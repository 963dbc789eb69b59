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
  emulator backend and compares bit patterns; returns one row per (case, kernel).

Run as ``python -m precision.gemm.record record OUT.npz``, ``... verify IN.npz`` or
``... compare NEW.npz OLD.npz``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Iterator

import numpy as np

from precision.gemm.schedule import Schedule, all_schedules

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


def _sha(x: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(x).view(np.uint8)).hexdigest()


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

    data: dict[str, np.ndarray] = {}
    count = 0
    for full, sizes in ((True, sizes_full), (False, sizes_hashed)):
        for n, label in _cases(sizes, special=full):
            A, B = case_inputs(n, label)
            key = f"n{n}/{label}"
            if full:
                data[f"{key}/A"] = A.view(np.uint32)
                data[f"{key}/B"] = B.view(np.uint32)
            else:
                data[f"{key}/sha_A"] = np.array(_sha(A))
                data[f"{key}/sha_B"] = np.array(_sha(B))
            for s in all_schedules():
                Ak, Bk = kernel_inputs(A, B, s)
                D = np.asarray(cuda_gemm(Ak, Bk, s).get(), dtype=np.float32)
                kk = f"{key}/{s.kernel}"
                if full:
                    data[f"{kk}/D"] = D.view(np.uint32)
                else:
                    data[f"{kk}/sha_D"] = np.array(_sha(D))
                    data[f"{kk}/rows"] = D[sample_rows(n)].view(np.uint32)
                count += 1
    np.savez_compressed(path, **data)
    return count


def _schedule_by_kernel() -> dict[str, Schedule]:
    return {s.kernel: s for s in all_schedules()}


def verify(path: str, *, max_n: int | None = None, kernels: list[str] | None = None) -> list[dict]:
    """Compare every record in ``path`` with the emulator backend; one dict per record with
    ``n, distribution, kernel, identical`` (bool) and ``mismatches`` (count, or -1 when only
    hashes were stored and they differ)."""
    from precision.gemm.emulator import run_schedule

    data = np.load(path)
    scheds = _schedule_by_kernel()
    rows = []
    for name in sorted(data.files):
        parts = name.split("/")
        if len(parts) != 4 or parts[3] not in ("D", "sha_D"):
            continue
        n, label, kernel = int(parts[0][1:]), parts[1], parts[2]
        if (max_n is not None and n > max_n) or (kernels and kernel not in kernels):
            continue
        key = f"n{n}/{label}"
        if f"{key}/A" in data.files:
            A = data[f"{key}/A"].view(np.float32)
            B = data[f"{key}/B"].view(np.float32)
        else:
            A, B = case_inputs(n, label)
            if _sha(A) != str(data[f"{key}/sha_A"]) or _sha(B) != str(data[f"{key}/sha_B"]):
                raise RuntimeError(f"{key}: regenerated inputs differ from the recorded hashes")
        s = scheds[kernel]
        D = run_schedule(*kernel_inputs(A, B, s), s)
        if parts[3] == "D":
            mism = int(np.count_nonzero(D.view(np.uint32) != data[name]))
        else:
            same = _sha(D) == str(data[name])
            recorded_rows = data[f"{key}/{kernel}/rows"]
            row_mism = int(np.count_nonzero(D[sample_rows(n)].view(np.uint32) != recorded_rows))
            mism = 0 if same else (row_mism if row_mism else -1)
        rows.append(
            {
                "n": n,
                "distribution": label,
                "kernel": kernel,
                "identical": mism == 0,
                "mismatches": mism,
            }
        )
    return rows


def compare(new_path: str, old_path: str) -> dict[str, list[str]]:
    """Arrays of two recordings, by outcome: ``identical`` (same bits), ``different`` and
    ``only_new`` / ``only_old`` (recorded in one file only)."""
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
        elif new[name].shape == old[name].shape and np.array_equal(new[name], old[name]):
            out["identical"].append(name)
        else:
            out["different"].append(name)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m precision.gemm.record", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("path")
    r.add_argument("--full", type=int, nargs="*", default=[16, 100])
    r.add_argument("--hashed", type=int, nargs="*", default=[257, 1024])
    v = sub.add_parser("verify")
    v.add_argument("path")
    v.add_argument("--max-n", type=int, default=None)
    v.add_argument("--kernel", action="append", default=None)
    c = sub.add_parser("compare")
    c.add_argument("new")
    c.add_argument("old")
    args = p.parse_args(argv)
    if args.cmd == "record":
        print(f"recorded {record(args.path, args.full, args.hashed)} kernel outputs")
        return 0
    if args.cmd == "compare":
        result = compare(args.new, args.old)
        for outcome in ("different", "only_new", "only_old"):
            for name in result[outcome]:
                print(f"{outcome:9s} {name}")
        print(", ".join(f"{len(v)} {k}" for k, v in result.items()))
        return 1 if result["different"] else 0
    bad = 0
    for row in verify(args.path, max_n=args.max_n, kernels=args.kernel):
        bad += not row["identical"]
        print(
            f"n={row['n']:5d} {row['distribution']:10s} {row['kernel']:22s} "
            f"{'identical' if row['identical'] else 'DIFFERENT'} ({row['mismatches']})",
            flush=True,
        )
    print(f"{bad} record(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["DISTRIBUTIONS", "case_inputs", "compare", "record", "verify"]
