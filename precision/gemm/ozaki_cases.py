"""The recorded Ozaki CUDA outputs (``tests/data/ozaki/ozaki_cuda_h200.npz``): writing,
reading and comparing them.

:func:`precision.gemm.ozaki_bench.identity` writes the file; the CPU test
``tests/gemm/test_ozaki.py::test_emulator_matches_recorded_cuda_outputs`` replays it. Both go
through this module, so the storage format lives in one place.

A case is named ``case_method-{m}_fmt-{f}_n-{n}_phi-{phi}_target-{t}_terms-{terms}_specials-{s}``
and its inputs are ``in_n-{n}_phi-{phi}_specials-{s}_A`` / ``_B`` (float64, stored whole). Its
CUDA output D (n x n, float64 or float32) is stored

- whole, as ``{case}_D``, when n < :data:`HASHED_FROM_N`;
- compactly when n >= :data:`HASHED_FROM_N` (these outputs are random-looking floats that do
  not compress): ``{case}_D_sha256`` (0-d unicode array: hex SHA-256 of the C-order bytes of
  D in its recorded dtype), ``{case}_D_dtype`` (0-d unicode array: ``D.dtype.str``, e.g.
  ``<f8``, byte order included), ``{case}_D_shape`` (int64 array: ``D.shape``) and
  ``{case}_D_rows`` (``D[:STORED_ROWS]``, same dtype), so that a mismatch can still be located
  when it falls in those rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from precision.gemm.record import array_sha256

#: Outputs of cases with n >= this are stored as hash + first rows (see the module doc).
HASHED_FROM_N = 100
#: Leading output rows kept as an array in a compact record.
STORED_ROWS = 2
#: What :func:`compare_output` returns when the output matches the record.
IDENTICAL = "identical"

_WHOLE = "_D"
_SHA, _DTYPE, _SHAPE, _ROWS = "_D_sha256", "_D_dtype", "_D_shape", "_D_rows"


@dataclass(frozen=True, eq=False)  # (holds arrays: compare with compare_output)
class HashedOutput:
    """A compact record of one CUDA output D: the SHA-256 (hex) of D's C-order bytes in dtype
    ``dtype`` (a ``numpy.dtype.str`` such as ``<f8``), D's shape, and ``rows`` = ``D[:k]``
    (k = :data:`STORED_ROWS` when recorded)."""

    sha256: str
    dtype: str
    shape: tuple[int, ...]
    rows: np.ndarray


#: One recorded output: the whole array, or its compact record.
Recorded = np.ndarray | HashedOutput


def compact(D: np.ndarray) -> HashedOutput:
    """The compact record of D (derived from D's bytes only, nothing recomputed)."""
    return HashedOutput(array_sha256(D), D.dtype.str, tuple(D.shape), D[:STORED_ROWS].copy())


def output_entries(case: str, D: np.ndarray) -> dict[str, np.ndarray]:
    """The ``.npz`` entries that store the output D of ``case``: ``{case}_D`` (whole) when
    D has fewer than :data:`HASHED_FROM_N` rows, else the four compact keys."""
    if D.shape[0] < HASHED_FROM_N:
        return {case + _WHOLE: D}
    h = compact(D)
    return {
        case + _SHA: np.array(h.sha256),
        case + _DTYPE: np.array(h.dtype),
        case + _SHAPE: np.array(h.shape, dtype=np.int64),
        case + _ROWS: h.rows,
    }


def case_names(z: Any) -> list[str]:
    """Sorted case names in an opened ``.npz`` (``numpy.load``), whole and compact."""
    return sorted(k[: -len(s)] for k in z.files for s in (_WHOLE, _SHA) if k.endswith(s))


def read_output(z: Any, case: str) -> Recorded:
    """The recorded output of ``case`` from an opened ``.npz``: the whole array, or its
    :class:`HashedOutput`. Raises ``KeyError`` when the case is missing or its compact record
    is incomplete."""
    if case + _WHOLE in z.files:
        return np.asarray(z[case + _WHOLE])
    return HashedOutput(
        sha256=str(z[case + _SHA][()]),
        dtype=str(z[case + _DTYPE][()]),
        shape=tuple(int(s) for s in z[case + _SHAPE]),
        rows=np.asarray(z[case + _ROWS]),
    )


@dataclass(frozen=True, eq=False)  # (holds arrays: compare with compare_output)
class RecordedCase:
    """One recorded case: how to run it, its inputs, and its recorded CUDA output."""

    name: str
    method: str
    fmt: str
    target: str
    terms: int | str
    A: np.ndarray
    B: np.ndarray
    output: Recorded


def load_case(path: Path | str, case: str) -> RecordedCase:
    """Case ``case`` of the recording at ``path``: its parameters (parsed from the name), its
    float64 inputs and its output (:func:`read_output`)."""
    parts = dict(p.split("-", 1) for p in case.split("_")[1:] if "-" in p)
    inputs = f"in_n-{parts['n']}_phi-{parts['phi']}_specials-{parts['specials']}"
    terms: int | str = parts["terms"] if parts["terms"] == "auto" else int(parts["terms"])
    with np.load(path) as z:
        return RecordedCase(
            name=case,
            method=parts.get("method", "ozaki2"),
            fmt=parts.get("fmt", "int8"),
            target=parts["target"],
            terms=terms,
            A=z[inputs + "_A"],
            B=z[inputs + "_B"],
            output=read_output(z, case),
        )


def _first_difference(got: np.ndarray, want: np.ndarray, what: str) -> str | None:
    """None when ``got`` and ``want`` (same dtype and shape) are bit-identical, else where
    the first (C-order) element differs and how many do."""
    u = f"u{want.itemsize}"
    diff = np.argwhere(got.view(u) != want.view(u))
    if diff.size == 0:
        return None
    i = tuple(int(x) for x in diff[0])
    return (
        f"{len(diff)} element(s) of {what} differ, first at {i}: got {got[i].item()!r} "
        f"({got.view(u)[i]:#x}), recorded {want[i].item()!r} ({want.view(u)[i]:#x})"
    )


def compare_output(got: np.ndarray, recorded: Recorded) -> str:
    """Compare an output with its record, bit for bit; :data:`IDENTICAL` or what differs.

    Whole record: dtype, shape, then every element's bit pattern (NaN payloads and the sign
    of zero included); a mismatch names the first differing element. Compact record: dtype
    (``dtype.str``, byte order included) and shape, then the bit patterns of the stored
    leading rows (a mismatch there names the first differing element), then the SHA-256 of
    all of ``got``'s C-order bytes against the recorded one; so the whole output is compared,
    and a difference that lies only outside the stored rows is reported as
    ``"hash differs outside the stored rows ..."``.
    """
    if isinstance(recorded, HashedOutput):
        dtype, shape = recorded.dtype, recorded.shape
    else:
        dtype, shape = recorded.dtype.str, tuple(recorded.shape)
    if got.dtype.str != dtype:
        return f"dtype {got.dtype.str}, recorded {dtype}"
    if tuple(got.shape) != shape:
        return f"shape {tuple(got.shape)}, recorded {shape}"
    if not isinstance(recorded, HashedOutput):
        return _first_difference(got, recorded, "the whole output") or IDENTICAL
    k = recorded.rows.shape[0]
    where = f"the stored rows 0..{k - 1}"
    if recorded.rows.dtype.str != dtype or recorded.rows.shape != (k, *shape[1:]):
        return f"malformed record: rows {recorded.rows.dtype.str} {recorded.rows.shape}"
    rows = _first_difference(got[:k], recorded.rows, where)
    if rows is not None:
        return rows
    if array_sha256(got) != recorded.sha256:
        return f"hash differs outside the stored rows (rows 0..{k - 1} identical)"
    return IDENTICAL
