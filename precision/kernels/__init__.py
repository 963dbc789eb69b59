"""CUDA C++ kernels built with nvcc (cached cubins) and their CuPy launchers."""

from precision.kernels.build import build_cubin, cache_dir

__all__ = ["build_cubin", "cache_dir"]
