"""precision: bit-exact tensor-core emulation, GPU GEMM kernels and accuracy experiments.

Public entry points:

- :func:`precision.mma` -- emulate a chain of tensor-core MMA instructions bit for bit.
- :mod:`precision.formats` -- number formats and exact rounding.
"""

from importlib.metadata import PackageNotFoundError, version

from precision.tensorcore import mma

try:
    __version__ = version("precision")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.1.0+src"

__all__ = ["mma", "__version__"]
