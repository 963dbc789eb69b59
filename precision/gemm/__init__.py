"""GEMM methods (plain, corrected, satf) as schedules, executed by the emulator, our CUDA
kernels or cuBLAS. See :func:`gemm` and ``docs/gemm.md``."""

from precision.gemm.api import BACKENDS, available_backends, cuda_gemm, gemm
from precision.gemm.schedule import CORRECTIONS, METHODS, Schedule, all_schedules, get_schedule

__all__ = [
    "BACKENDS",
    "CORRECTIONS",
    "METHODS",
    "Schedule",
    "all_schedules",
    "available_backends",
    "cuda_gemm",
    "gemm",
    "get_schedule",
]
