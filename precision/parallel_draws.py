"""Large uniform draws spread over the CPU's cores, with the bits of one serial draw.

``Generator.random`` and ``Generator.uniform`` turn each 64-bit output of the bit generator
into one float64 (``(x >> 11)·2^-53``, then ``low + (high - low)·u``), in order. PCG64 and
PCG64DXSM, numpy's default, can jump ahead by any number of outputs (``advance``). So a draw of
N values splits into chunks, each drawn by its own copy of the generator advanced to the
chunk's first output, in threads (numpy fills an array without holding the GIL). Each chunk
runs numpy's own code, so every value is the one the serial call gives; afterwards ``rng`` is
advanced by N, where the serial call leaves it. Inputs drawn by a seeded run therefore keep
their bits, and the draws after them (``standard_normal``, say) do too.

The threads are used only where that holds and pays: at least :data:`MIN_PARALLEL` values, a
PCG64 or PCG64DXSM bit generator with no buffered 32-bit half-output (``advance`` drops it,
where the serial call would keep it for a later 32-bit draw), and more than one core
(:func:`precision.threads.thread_count`). Anything else is one serial numpy call. Beside the
output, each thread holds one piece of at most :data:`_PIECE` values at a time.

Measured on the H200 node (16 cores): ``random`` of 16384 x 16384 values took 1.16 s in one
call and 0.21 s in threads (``results/bench/input_draw_h200_2026-11-27/``). The normal draws
of ``exp_rand`` take a varying number of outputs each, so they cannot be split this way and
stay serial (3.6 s for that size).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from precision.threads import blocks, in_threads, thread_count

__all__ = ["MIN_PARALLEL", "random", "uniform"]

#: Values from which a draw is spread over threads (below, one call is as fast).
MIN_PARALLEL = 1 << 20
#: Values a thread draws per numpy call (8 MiB of float64): the temporaries of a threaded draw
#: stay at this per thread, whatever its size.
_PIECE = 1 << 20
_ADVANCEABLE = (np.random.PCG64, np.random.PCG64DXSM)


def random(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """``rng.random(size=shape)``: float64 values in [0, 1), the same bits, on every core."""
    return _draw(rng, shape, lambda g, n: g.random(n))


def uniform(
    rng: np.random.Generator, low: float, high: float, shape: tuple[int, ...]
) -> np.ndarray:
    """``rng.uniform(low, high, size=shape)``: the same bits, on every core."""
    return _draw(rng, shape, lambda g, n: g.uniform(low, high, n))


#: Draws ``n`` values from a generator, as one numpy call.
_Fill = Callable[[np.random.Generator, int], np.ndarray]


def _draw(rng: np.random.Generator, shape: tuple[int, ...], fill: _Fill) -> np.ndarray:
    size = int(np.prod(shape, dtype=np.int64))
    bits = rng.bit_generator
    threads = min(thread_count(), size // (MIN_PARALLEL // 2)) if size >= MIN_PARALLEL else 1
    if threads < 2 or not isinstance(bits, _ADVANCEABLE) or bits.state["has_uint32"]:
        return fill(rng, size).reshape(shape)
    state = bits.state
    out = np.empty(size, dtype=np.float64)

    def chunk(share: slice) -> None:
        own = type(bits)()
        own.state = state
        own.advance(share.start)
        draw = np.random.Generator(own)
        for piece in range(share.start, share.stop, _PIECE):  # consecutive calls: consecutive
            end = min(piece + _PIECE, share.stop)  # outputs
            out[piece:end] = fill(draw, end - piece)

    in_threads(chunk, blocks(size, threads))
    bits.advance(size)  # where the serial draw leaves the generator
    return out.reshape(shape)
