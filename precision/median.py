"""The median of a large array of nonnegative float64 values, in threads, with the bits of
``np.median``.

``np.median`` partitions the whole array in one thread: at n = 16384 (2^28 relative errors)
it took 4.6 s of the 6.0 s of :func:`precision.metrics.error_metrics` on a GPU node's 16
cores. Here the threads first count the values by the top 16 bits of their float64 encoding
(sign, exponent and the first 4 fraction bits: 16 bins per binade). For values ≥ +0 the
encodings, read as unsigned integers, are in the order of the values, so the counts tell
which one or two bins hold the middle ranks. Only those bins' values are gathered and
partitioned, and the middle values are averaged as ``np.median`` averages them
(``np.mean`` of the one or two middle values: ``(lo + hi) / 2`` in float64).

Anything else takes ``np.median`` itself: fewer than :data:`COUNTED_FROM` values (the
65,536 counts cost about 3 ms), a NaN, an Inf, a negative value or −0.0 (all counted in the
bins from 0x7FF0 up), a big-endian machine, and middle bins that hold more than
:data:`MOST_GATHERED` of the values (nearly all values alike), where the gathering would not
pay. Measured on a 2-core CPU, one thread: 2^18 values 3.1 ms against ``np.median``'s 3.3,
2^20 values 6.4 ms against 15, 2^22 values 22 ms against 57, 8192² values over ten binades
0.28–0.29 s against 0.85–0.91 (``results/bench/median_2026-11-27/`` for a GPU node).
"""

from __future__ import annotations

import sys

import numpy as np

from precision.threads import in_threads

#: Values from which they are counted; fewer take ``np.median``.
COUNTED_FROM = 1 << 18
#: Elements per ``np.bincount`` call and per gathering step (bincount's index copy takes 8
#: bytes per element: 2 MiB per thread).
PIECE = 1 << 18
#: Bins of the top 16 bits of a float64 (sign, 11 exponent bits, 4 fraction bits).
BINS = 1 << 16
#: The first bin of +Inf and NaN (positive sign, exponent all ones); negative values, −0.0
#: and negative NaN lie above it.
FIRST_SPECIAL_BIN = 0x7FF0
#: Middle bins holding more than this fraction of the values: ``np.median`` instead.
MOST_GATHERED = 1 / 4


def median_nonnegative(
    x: np.ndarray, parts: list[slice] | None = None, overwrite: bool = False
) -> float:
    """``float(np.median(x))``, bit for bit, for a float64 ``x`` whose values are expected to
    be ≥ +0 (others are handled by ``np.median``).

    ``parts``: slices of the flat array that cover it, one per thread (None: one thread).
    ``overwrite``: ``np.median`` may reorder ``x`` in place where it is called (no copy of
    ``x``); counting and gathering leave ``x`` as it was.
    """
    usual = x.dtype == np.float64 and x.flags.c_contiguous and sys.byteorder == "little"
    if x.size < COUNTED_FROM or not usual:
        return float(np.median(x, overwrite_input=overwrite))
    parts = [slice(0, x.size)] if parts is None else parts
    flat = x.reshape(-1)
    top = flat.view(np.uint16)[3::4]  # little-endian: the last 16 bits of each element

    def count(part: slice) -> np.ndarray:
        counts = np.zeros(BINS, dtype=np.int64)
        for start in range(part.start, part.stop, PIECE):
            counts += np.bincount(top[start : min(start + PIECE, part.stop)], minlength=BINS)
        return counts

    per_part = in_threads(count, parts)
    counts = np.sum(per_part, axis=0)
    if counts[FIRST_SPECIAL_BIN:].any():
        return float(np.median(x, overwrite_input=overwrite))
    # 0-based ranks of the middle value(s): equal for an odd size
    low_rank, high_rank = (x.size - 1) // 2, x.size // 2
    below = np.cumsum(counts)  # values in this bin and all bins below it
    low_bin, high_bin = (int(v) for v in np.searchsorted(below, [low_rank, high_rank], "right"))
    first = int(below[low_bin] - counts[low_bin])  # rank of the first value of low_bin
    # the middle bins' values, each part's after the parts before it (bins between are empty)
    ends = np.cumsum([int(c[low_bin : high_bin + 1].sum()) for c in per_part])
    if ends[-1] > MOST_GATHERED * x.size:
        return float(np.median(x, overwrite_input=overwrite))
    values = np.empty(int(ends[-1]), dtype=np.float64)
    width = np.uint16(high_bin - low_bin)

    def gather(job: tuple[slice, int]) -> None:
        part, at = job
        for start in range(part.start, part.stop, PIECE):
            piece = slice(start, min(start + PIECE, part.stop))
            # top - low_bin wraps around below low_bin, so one comparison selects the bins
            found = flat[piece][(top[piece] - np.uint16(low_bin)) <= width]
            values[at : at + found.size] = found
            at += found.size

    in_threads(gather, list(zip(parts, [0, *ends[:-1].tolist()], strict=True)))
    low, high = low_rank - first, high_rank - first
    values.partition((low, high))
    return float(np.mean(values[low : high + 1]))  # (one value for an odd size)
