"""Vendor-library baselines (cuBLAS through CuPy).

GPU-only modules here import CuPy lazily through :mod:`precision.gpu`; importing this package
never needs a GPU.
"""
