"""Bit-exact emulation of tensor-core MMA instructions.

- :mod:`precision.tensorcore.arch` says *what* each instruction computes, per GPU generation:
  the one :class:`Instruction` data (PTX string, family mma/wgmma/wmma, shape, a/b/accumulator
  formats, block size, fraction bits, zero-anchor floor, output rounding, schedule, evidence);
- :mod:`precision.tensorcore.fdpa` is the one vectorised fused-block arithmetic core;
- :mod:`precision.tensorcore.chain` holds the public :func:`mma` (validation, chunking, chains).
"""

from precision.tensorcore.arch import ARCHS, ArchModel, Instruction, get_arch
from precision.tensorcore.chain import mma

__all__ = ["ARCHS", "ArchModel", "Instruction", "get_arch", "mma"]
