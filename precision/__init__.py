"""precision: bit-exact tensor-core emulation, GPU GEMM kernels and accuracy experiments.

Python entry points:

- :func:`precision.mma` -- emulate a chain of tensor-core MMA instructions bit for bit
  (``precision.tensorcore``; arch models in ``precision.tensorcore.ARCHS``).
- :func:`precision.gemm.gemm` -- D = A·B by a GEMM method (plain, corrected, satf) on the
  emulator, our CUDA kernels or cuBLAS (``precision.gemm.get_schedule`` shows the schedule).
- :func:`precision.reference.exact_matmul` -- A·B (+C) computed exactly, rounded once.
- :mod:`precision.formats` -- number formats, exact rounding and bit encodings.
- :mod:`precision.distributions`, :mod:`precision.metrics` -- test inputs and error metrics.
- :func:`precision.runner.runner.run_experiment` -- run a config-driven sweep;
  :func:`precision.runner.store.recombine` -- a results directory's table, rebuilt from its
  point files when needed; :func:`precision.runner.catalog.combination_problem` -- whether a
  method x format x backend x arch combination runs.
- :mod:`precision.probe` -- capture and verify tensor-core outputs on a GPU.

Command line (``precision COMMAND --help`` for each):

- ``precision run CONFIG.toml`` -- run or resume a sweep into results/<name>/.
- ``precision plot RESULTS_DIR`` -- draw the figures of a results directory.
- ``precision list`` -- sweep axis values, backends usable here, valid combinations.
- ``precision info`` -- versions, git commit, GPU, CUDA.
- ``precision capture`` / ``precision verify`` -- record / check tensor-core outputs (GPU).
- ``precision bench`` -- emulator and exact-reference speed (``--quick``: a first look).
- ``precision bench-gemm`` -- CUDA GEMM kernels against cuBLAS (GPU).
"""

from importlib.metadata import PackageNotFoundError, version

from precision.tensorcore import mma

try:
    __version__ = version("precision")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.1.0+src"

__all__ = ["mma", "__version__"]
