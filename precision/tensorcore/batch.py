"""Batch axes of the tensor-core emulators: which entry of an operand each output batch entry
reads, without materialising a broadcast.

An operand ``x`` of shape ``own + (rows, cols)`` meets the others over the broadcast batch
shape ``batch``. :func:`flat_batch` gives ``x`` as ``[Rx, rows, cols]`` over its own entries
and a :class:`BatchEntries` that maps output batch entries (C order over ``batch``) to those
entries, a range or an index array at a time, so nothing of size R = prod(batch) is held.
"""

from __future__ import annotations

import numpy as np


class BatchEntries:
    """For each of the R output batch entries (C order over ``batch``), the entry of an operand
    flattened to ``[Rx, rows, cols]`` (its own batch axes ``own``, broadcast to ``batch``) that
    it reads. Indexed by a slice or an integer array of output entries; nothing of size R is
    held (three int64 indices per entry were 18 MiB for a stack of 800000 tiles)."""

    def __init__(self, own: tuple[int, ...], batch: tuple[int, ...]):
        self.batch = batch
        self.own = (1,) * (len(batch) - len(own)) + tuple(own)
        self.size = int(np.prod(batch, dtype=np.int64))

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key: slice | np.ndarray) -> np.ndarray:
        r = np.arange(*key.indices(self.size)) if isinstance(key, slice) else np.asarray(key)
        if self.own == self.batch:
            return r
        at = np.unravel_index(r, self.batch)
        idx = np.zeros_like(r)
        stride = 1
        for axis in range(len(self.own) - 1, -1, -1):
            if self.own[axis] > 1:
                idx += at[axis] * stride
            stride *= self.own[axis]
        return idx


def flat_batch(x: np.ndarray, batch: tuple[int, ...]) -> tuple[np.ndarray, BatchEntries]:
    """``x`` as ``[Rx, rows, cols]`` over its own batch entries, and for each of the R output
    batch entries (C order over ``batch``) the entry of ``x`` it reads. Nothing of ``x`` is
    copied for the broadcast."""
    own = x.shape[:-2]
    rx = int(np.prod(own, dtype=np.int64))
    return x.reshape((rx,) + x.shape[-2:]), BatchEntries(own, batch)
