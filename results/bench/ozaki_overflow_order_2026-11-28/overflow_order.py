"""Native DGEMM / SGEMM (cuBLAS via CuPy), the DMMA emulator, and the Ozaki schemes (emulator
and CUDA) where a finite product overflows next to an Inf of the other sign: does native
GEMM's class (NaN or +-Inf) depend on where the overflowing product sits in k?

Run on a GPU machine from the repository root: PYTHONPATH=. python THIS.py"""

import numpy as np

from precision.gemm import gemm
from precision.tensorcore.chain import mma

BIG64, BIG32 = 1e308, 1e30


def cases(k: int, big: float, dtype):
    """(label, A, B): an Inf product -inf at k index i, an overflowing +big*big at index j."""
    out = []
    for i, j in ((0, 1), (1, 0), (0, k - 1), (k - 1, 0), (k // 2, k // 2 + 1)):
        if i == j or max(i, j) >= k:
            continue
        a = np.zeros((1, k), dtype)
        b = np.zeros((k, 1), dtype)
        a[0, i], b[i, 0] = np.inf, -1.0
        a[0, j], b[j, 0] = big, big
        out.append((f"k={k} inf@{i} overflow@{j}", a, b))
    return out


def cls(x) -> str:
    x = float(np.asarray(x).ravel()[0])
    return "nan" if np.isnan(x) else repr(x)


def main() -> None:
    import cupy as cp

    print("case | cuBLAS DGEMM | DMMA emulator | ozaki2 emulator | ozaki2 cuda | ozaki1 cuda")
    for k in (2, 4, 16, 256, 4096):
        for label, a, b in cases(k, BIG64, np.float64):
            native = cp.asnumpy(cp.asarray(a) @ cp.asarray(b))
            kp = -(-k // 4) * 4
            ap, bp = np.zeros((8, kp)), np.zeros((kp, 8))
            ap[0, :k], bp[:k, 0] = a[0], b[:, 0]
            dmma = mma(ap, bp, np.zeros((8, 8)))[0, 0]
            row = [native, dmma, gemm(a, b, method="ozaki2"),
                   gemm(a, b, method="ozaki2", backend="cuda"),
                   gemm(a, b, method="ozaki1", backend="cuda")]
            print(label, "|", " | ".join(cls(x) for x in row), flush=True)
    print("fp32: case | cuBLAS SGEMM | ozaki2 fp32 emulator | ozaki2 fp32 cuda")
    for k in (2, 16, 4096):
        for label, a, b in cases(k, BIG32, np.float32):
            native = cp.asnumpy(cp.asarray(a) @ cp.asarray(b))
            row = [native, gemm(a, b, method="ozaki2", target="fp32"),
                   gemm(a, b, method="ozaki2", target="fp32", backend="cuda")]
            print(label, "|", " | ".join(cls(x) for x in row), flush=True)


if __name__ == "__main__":
    main()
