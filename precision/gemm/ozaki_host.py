"""The Ozaki kernels' CUDA source run on the CPU: ``precision/kernels/ozaki2.cu`` and
``ozaki1.cu`` compiled by g++ as host code (:func:`host_library`, with the shims of
``precision/kernels/host/``), and :func:`precision.gemm.ozaki_cuda.ozaki2_cuda` itself run
with numpy standing in for CuPy (:func:`kernels_on_the_cpu`).

The checks here (``python -m precision.gemm.ozaki_cuda_check --cpu --host``, a CPU CI test)
compare what the kernels' source computes with the independent reference of
:mod:`precision.gemm.ozaki_spec_reference`, bit for bit: the residue functions of the fused
GEMM's epilogue (:func:`host_residues`), the output rounding (:func:`host_rounding`), single
kernels (:func:`host_case`), the block barriers of the cooperative kernels
(:func:`host_barriers`), the kernel's term count (:func:`host_auto_terms`) and the whole
pipeline (:func:`host_pipeline`). The GPU runs the same source; this is what CI can check of
it without one.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from precision.gemm.ozaki import (
    MODULI,
    TARGETS,
    LineStats,
    apply_specials,
    auto_terms,
    round_limbs,
)
from precision.gemm.ozaki_spec_reference import (
    MASK32,
    exp_rand,
    float_bits,
    line_stats,
    make_operands,
    reference,
    sym_mod,
)
from precision.kernels.build import KERNEL_DIR

#: The host harness and its shims (C++ sources; the harness includes the kernels' sources).
HOST_DIR = KERNEL_DIR / "host"


@functools.cache
def host_library(inp: str) -> Any:
    """The Ozaki kernels compiled as host code: ``precision/kernels/host/ozaki_host_harness.cpp``
    (which includes ``ozaki2.cu`` and ``ozaki1.cu``) built by g++ into a shared library and
    loaded with ctypes, once per process and input kind ``inp`` (the GPU modules' defines,
    :data:`precision.gemm.ozaki_cuda.IN_FLAGS`: ``"f32"`` reads A and B as float32). Built
    without FMA contraction, so that every floating-point operation rounds as the CUDA source
    writes it. No default for ``inp``, so that every call caches under the same key."""
    import ctypes
    import shutil
    import subprocess
    import tempfile

    from precision.gemm.ozaki_cuda import IN_FLAGS

    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        raise RuntimeError("--host needs a C++ compiler (g++) on PATH")
    # (the folder goes once the library is loaded: a loaded library needs no file)
    with tempfile.TemporaryDirectory(prefix="oz2host") as folder:
        lib = Path(folder) / "liboz2host.so"
        harness = HOST_DIR / "ozaki_host_harness.cpp"
        cmd = [cxx, "-O2", "-std=c++17", "-ffp-contract=off", "-fPIC", "-shared",
               *IN_FLAGS[inp], f"-I{KERNEL_DIR}", "-o", str(lib), str(harness)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"host build of ozaki2.cu failed:\n{' '.join(cmd)}\n{proc.stderr}")
        return ctypes.CDLL(str(lib))


def _ptr(a: np.ndarray) -> Any:
    import ctypes

    return a.ctypes.data_as(ctypes.c_void_p)


def _residue_inputs(rng: np.random.Generator, m: int, count: int) -> np.ndarray:
    """``count`` random int32 values and the edges for a residue modulo ``m``: the int32
    extremes, the values where the 2^16 split's high part changes, multiples of m and the
    symmetric range's ends around them."""
    edges = [-(2**31), -(2**31) + 1, 2**31 - 1, 2**31 - 2, 0, 1, -1]
    edges += [s * (2**15 + d) for s in (1, -1) for d in (-1, 0, 1)]
    edges += [2**31 - 2**15 + d for d in (-1, 0, 1)]
    near = [k * m + d for k in (0, 1, -1, 12345, -12345, (2**31 - 1) // m, -(2**31 // m))
            for d in (-(m // 2) - 1, -(m // 2), -1, 0, 1, m // 2, m // 2 + 1)]  # fmt: skip
    return np.concatenate([
        rng.integers(-(2**31), 2**31, count, dtype=np.int64),
        np.array([x for x in edges + near if -(2**31) <= x < 2**31], dtype=np.int64),
    ]).astype(np.int32)  # fmt: skip


def host_residues(
    seed: int = 5, count: int = 200_000, general_count: int = 20_000
) -> dict[str, Any]:
    """The fused GEMM epilogue's residue functions (precision/kernels/ozaki_residue.cuh,
    compiled from the source by g++) against Python's symmetric residue: ``residue_low_byte``
    for every odd modulus of :data:`MODULI` on ``count`` random int32 values and the edges
    (:func:`_residue_inputs`), and ``sym_mod``, the general path, for every modulus in
    [2, 256] on ``general_count`` random values and the edges."""
    lib = host_library("f64")
    rng = np.random.default_rng(seed)

    def check(function: Any, out_dtype: Any, moduli: Any, n: int) -> tuple[int, int]:
        """(values checked, mismatches) of the harness's ``function`` over ``moduli``."""
        checked = bad = 0
        for m in moduli:
            c = _residue_inputs(rng, m, n)
            got = np.empty(c.size, dtype=out_dtype)
            function(_ptr(c), c.size, m, _ptr(got))
            bad += int(np.count_nonzero(got.astype(np.int64) != sym_mod(c.astype(np.int64), m)))
            checked += c.size
        return checked, bad

    # (m = 256: the residue is the low byte itself)
    checked, bad = check(lib.residue_bytes, np.int8, [m for m in MODULI if m != 256], count)
    general_checked, general_bad = check(lib.sym_mod_values, np.int32, range(2, 257), general_count)
    return {
        "residue_bytes_checked": checked, "residue_bytes_mismatches": bad,
        "sym_mod_checked": general_checked, "sym_mod_mismatches": general_bad,
        "ok": bad == 0 and general_bad == 0,
    }  # fmt: skip


def host_rounding(seed: int = 3, count: int = 4000) -> dict[str, Any]:
    """The kernels' final rounding (``round_out``: fast path plus ``round_limbs``) against
    :func:`precision.gemm.ozaki.round_limbs` on crafted integers: exact ties and near-ties at
    the target's precision, powers of two, all bit lengths, exponents across the subnormal,
    normal and overflow ranges, both signs, 2..5 limbs."""
    lib = host_library("f64")
    rng = np.random.default_rng(seed)
    diff = 0
    for target in ("fp64", "fp32"):
        p, emin_sub, dtype = TARGETS[target]
        bits = np.uint64 if target == "fp64" else np.uint32
        emax_t = 1024 if target == "fp64" else 128
        for nl in (2, 3, 4, 5):
            vals, exps = [], []
            for _ in range(count):
                bl = int(rng.integers(1, 32 * nl - 2))
                kind = int(rng.integers(4))
                x = int.from_bytes(rng.bytes(20), "little") % (1 << bl) | (1 << (bl - 1))
                if kind in (1, 3) and bl > p:  # an exact tie at precision p (kind 3: +-1)
                    x = ((x >> (bl - p)) << (bl - p)) | (1 << (bl - p - 1))
                    x += int(rng.choice([-1, 1])) if kind == 3 else 0
                elif kind == 2:
                    x = 1 << (bl - 1)
                if rng.random() < 0.5:
                    x = -x
                lo, hi = emin_sub - bl - 3, emax_t - bl + 3
                ex = int(rng.integers(lo, hi)) if rng.random() < 0.6 else int(
                    rng.choice([lo + 1, lo + 3, emin_sub + p - bl, emin_sub + p - bl + 1,
                                hi - 4, hi - 3, hi - 2])
                )  # fmt: skip
                vals.append(x)
                exps.append(ex)
            limbs = np.zeros((count, nl), dtype=np.int64)
            for i, x in enumerate(vals):
                for t in range(nl - 1):
                    limbs[i, t] = (x >> (32 * t)) & MASK32
                limbs[i, nl - 1] = x >> (32 * (nl - 1))
            e = np.array(exps, dtype=np.int64)
            ref = round_limbs([limbs[:, t].copy() for t in range(nl)], e, target)
            out = np.zeros(count, dtype=dtype)
            lib.round_test(_ptr(np.ascontiguousarray(limbs)), _ptr(e), count, nl,
                           int(target == "fp64"), p, emin_sub, _ptr(out))  # fmt: skip
            diff += int(np.count_nonzero(out.view(bits) != ref.view(bits)))
    return {"rounding_mismatches": diff, "ok": diff == 0}


class _HostArray(np.ndarray):
    """A numpy array standing in for a CuPy array (``.get()`` returns a host copy)."""

    def get(self) -> np.ndarray:
        return np.array(self)


def _h(x: Any) -> _HostArray:
    return np.asarray(x).view(_HostArray)


class _MockCuPy:
    """numpy standing in for CuPy in :func:`host_pipeline`; fresh buffers are filled with a
    poison byte (0x5A) so that reads of never-written workspace show up as mismatches."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    cuda = type("cuda", (), {"get_current_stream": staticmethod(lambda: None)})

    def asarray(self, x: Any, dtype: Any = None) -> _HostArray:
        return _h(np.asarray(x, dtype=dtype))

    def ascontiguousarray(self, x: Any, dtype: Any = None) -> _HostArray:
        return _h(np.ascontiguousarray(x, dtype=dtype))

    def empty(self, shape: Any, dtype: Any = np.float64) -> _HostArray:
        out = np.empty(shape, dtype=dtype)
        out.view(np.uint8)[...] = 0x5A
        return _h(out)

    def zeros(self, shape: Any, dtype: Any = np.float64) -> _HostArray:
        return _h(np.zeros(shape, dtype=dtype))

    def full(self, shape: Any, value: Any, dtype: Any = np.float64) -> _HostArray:
        return _h(np.full(shape, value, dtype=dtype))


#: Block-cooperative kernels -> their harness entry (one fiber per CUDA thread).
_COOPERATIVE = {"oz2_stats_rows": "stats_rows_threaded", "oz2_rows_fused": "rows_fused_threaded",
                "oz2_specials_f64": "specials_f64_threaded",
                "oz2_specials_f32": "specials_f32_threaded"}  # fmt: skip
#: The kernels that read A or B (their first argument, ``const OZ_IN*``).
INPUT_KERNELS = frozenset({
    "oz2_stats_rows", "oz2_stats_cols_max", "oz2_stats_cols_nfix", "oz2_residues_rows",
    "oz2_rows_fused", "oz2_residues_cols", "oz1_digits_rows_i8", "oz1_digits_cols_i8",
    "oz1_digits_rows_f16", "oz1_digits_cols_f16", "oz2_specials_f64", "oz2_specials_f32",
})  # fmt: skip
#: The dtype of every A or B the mock kernels were handed, by name (``"float32"``: read as
#: float32 by the ``"f32"`` library); :func:`kernels_on_the_cpu` empties it.
INPUT_READS: list[str] = []


class _MockKernel:
    def __init__(self, name: str, inp: str = "f64") -> None:
        self.name = name
        self.inp = inp

    def __call__(
        self,
        grid: tuple[int, ...],
        block: tuple[int, ...],
        args: tuple[Any, ...],
        shared_mem: int = 0,
    ) -> None:
        import ctypes

        assert block[0] == (384 if self.name == "oz2_rows_fused" else 256), block
        assert len(block) == 1, block
        if self.name in INPUT_KERNELS:  # the pointer type of the library's OZ_IN, checked
            want = np.float32 if self.inp == "f32" else np.float64
            assert args[0].dtype == want, (self.name, self.inp, args[0].dtype)
            INPUT_READS.append(str(args[0].dtype))
        lib = host_library(self.inp)
        holders: list[Any] = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous
                holders.append(ctypes.c_void_p(a.ctypes.data))
            else:
                assert isinstance(a, np.int32), (self.name, type(a))
                holders.append(ctypes.c_int(int(a)))
        params = (ctypes.c_void_p * len(holders))(
            *[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders]
        )
        gy = grid[1] if len(grid) > 1 else 1
        if self.name in _COOPERATIVE:
            if self.name == "oz2_rows_fused":
                assert shared_mem >= 8 * int(args[4]), (shared_mem, args[4])  # the staged row
            run = getattr(lib, _COOPERATIVE[self.name])
            if run(*holders, ctypes.c_uint(block[0])) != 0:
                raise RuntimeError(f"{self.name}: threads of a block diverge at a barrier")
            return
        rc = lib.launch(self.name.encode(), grid[0], gy, block[0], params)
        if rc != 0:
            raise RuntimeError(f"host launcher does not know kernel {self.name}")


class _MockGlobal:
    def __init__(self, name: str, inp: str = "f64") -> None:
        self.name = name
        self.inp = inp

    def copy_from_host_async(self, ptr: int, nbytes: int, stream: Any) -> None:
        import ctypes

        if host_library(self.inp).set_global(self.name.encode(), ctypes.c_void_p(ptr), nbytes) != 0:
            raise RuntimeError(f"unknown __constant__ {self.name}")


class MockModule:
    """Stands in for a compiled CuPy ``RawModule`` of the kernels: its functions launch the
    host-compiled kernels (:func:`host_library` of input kind ``inp``), its globals are the
    library's ``__constant__`` arrays."""

    def __init__(self, inp: str = "f64") -> None:
        self.inp = inp

    def get_function(self, name: str) -> _MockKernel:
        return _MockKernel(name, self.inp)

    def get_global(self, name: str) -> _MockGlobal:
        return _MockGlobal(name, self.inp)


def _mock_cublas(cp: Any, bres: Any, ares: Any, C: Any, M: int, nbp: int, kp: int, L: int) -> None:
    b = np.asarray(bres).reshape(L, nbp, kp).astype(np.float64)
    a = np.asarray(ares).reshape(L, M, kp).astype(np.float64)
    C.reshape(L, M, nbp)[...] = np.matmul(a, b.transpose(0, 2, 1)).astype(np.int32)


def _mock_fused(cp: Any, ares: Any, bres: Any, R: Any, M: int, nbp: int, kp: int, L: int,
                moduli: tuple[int, ...]) -> None:  # fmt: skip
    b = np.asarray(bres).reshape(L, nbp, kp).astype(np.float64)
    a = np.asarray(ares).reshape(L, M, kp).astype(np.float64)
    c = np.matmul(a, b.transpose(0, 2, 1)).astype(np.int64)
    R.reshape(L, M, nbp)[...] = np.stack([sym_mod(c[li], m) for li, m in enumerate(moduli)])


@contextlib.contextmanager
def kernels_on_the_cpu() -> Iterator[Any]:
    """Patches :mod:`precision.gemm.ozaki_cuda` so that its GPU code runs on the CPU: numpy
    for CuPy, the host-compiled kernels, numpy INT8 products for cuBLAS and for the fused
    GEMM. Yields the module; everything is restored on exit."""
    import precision.gpu
    import precision.vendor.cublas as vc
    from precision.gemm import ozaki_cuda as oc

    mock = _MockCuPy()
    patches: list[tuple[Any, str, Any]] = [
        (precision.gpu, "require_gpu", lambda what: mock),
        (oc, "_module", MockModule),
        (vc, "int8_gemm_strided_batched", _mock_cublas),
    ]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    saved_fused = sys.modules.get("precision.gemm.ozaki_gemm_launch")
    fake = types.ModuleType("precision.gemm.ozaki_gemm_launch")
    fake.gemm_mod = _mock_fused  # type: ignore[attr-defined]
    for obj, name, value in patches:
        setattr(obj, name, value)
    sys.modules["precision.gemm.ozaki_gemm_launch"] = fake
    oc._CONSTANTS_SET.clear()
    INPUT_READS.clear()
    try:
        yield oc
    finally:
        for obj, name, value in saved:
            setattr(obj, name, value)
        if saved_fused is None:
            sys.modules.pop("precision.gemm.ozaki_gemm_launch", None)
        else:
            sys.modules["precision.gemm.ozaki_gemm_launch"] = saved_fused
        oc._CONSTANTS_SET.clear()


def f32_operands(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A and B rounded to float32, with a float32 subnormal and the largest float32 in A (so
    that the float32 reads meet both ends of the format)."""
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    if A32.size >= 2:
        A32.flat[0] = np.float32(-1e-40)
        A32.flat[-1] = np.finfo(np.float32).max
    return A32, B32


#: host_pipeline's cases: (m, k, n, phi, target, terms, gemm, workspace factor, specials,
#: float32 inputs). The float32 ones reach every kernel that reads A or B with the "f32"
#: library: A's fused row kernel with aligned quad loads (K % 4 == 0) and without, the
#: statistics and residue kernels (``terms="auto"``), specials, several column blocks.
PIPELINE_CASES: tuple[tuple[int, int, int, float, str, int | str, str, float, bool, bool], ...] = (
    (70, 130, 90, 4.0, "fp64", 15, "cublas", 1.5, False, False),
    (70, 130, 90, 1.0, "fp32", 8, "fused", 1.5, False, False),
    (257, 257, 257, 1.0, "fp64", 15, "cublas", 0.25, True, False),
    (257, 257, 257, 1.0, "fp32", 8, "fused", 0.25, True, False),
    (100, 33, 300, 4.0, "fp64", "auto", "cublas", 0.3, False, False),
    (60, 200, 50, 2.0, "fp32", "auto", "fused", 1.5, False, False),
    (40, 500, 20, 0.0, "fp64", 16, "fused", 1.5, False, False),
    (1, 1, 1, 1.0, "fp64", 15, "cublas", 1.5, False, False),
    (3, 1, 5, 2.0, "fp32", 8, "fused", 1.5, False, False),
    (1, 7, 2, 4.0, "fp64", 20, "cublas", 1.5, False, False),
    (70, 128, 90, 2.0, "fp32", 8, "fused", 1.5, False, True),
    (37, 53, 29, 4.0, "fp64", 15, "cublas", 1.5, False, True),
    (65, 65, 65, 1.0, "fp64", "auto", "cublas", 0.3, True, True),
    (60, 200, 50, 1.0, "fp32", "auto", "fused", 1.5, False, True),
    # several blocks of A's rows (its residues alone would outgrow the budget): the fused
    # row kernel per block, residues_rows per block, NaN/Inf rows in later blocks, float32
    (300, 96, 40, 1.0, "fp64", 15, "fused", 1.5, False, False),
    (300, 96, 40, 4.0, "fp64", "auto", "cublas", 1.5, False, False),
    (257, 257, 257, 1.0, "fp64", 15, "fused", 0.1, True, False),
    (300, 96, 40, 2.0, "fp32", 8, "cublas", 1.5, False, True),
    (260, 64, 30, 0.5, "fp64", 16, "fused", 1.5, False, True),
)


def host_pipeline() -> list[dict[str, Any]]:
    """Run :func:`precision.gemm.ozaki_cuda.ozaki2_cuda` itself on the CPU
    (:func:`kernels_on_the_cpu`: all the kernels) for :data:`PIPELINE_CASES`; small workspace
    factors force several column blocks, tall thin cases several row blocks. Rectangular
    operands catch transposition mistakes. Compared bit for bit with :func:`reference` (of
    the float64 values of float32 inputs, exact); ``terms="auto"`` must pick
    :func:`auto_terms`'s count. Float32 inputs must also be read as float32 (``read_as``:
    the dtypes the input kernels were handed) and give the CPU emulator's bits
    (:func:`precision.gemm.ozaki.ozaki_gemm` on the float32 arrays)."""
    from precision.gemm.ozaki import ozaki_gemm

    results = []
    with kernels_on_the_cpu() as oc:
        rng = np.random.default_rng(11)
        for m, k, n, phi, target, terms, gemm, wf, specials, f32 in PIPELINE_CASES:
            if specials:
                A, B = make_operands(m, phi, seed=m, specials=True)
            else:
                A = exp_rand(rng, (m, k), phi=phi)
                B = exp_rand(rng, (k, n), phi=phi)
            if f32:
                A, B = f32_operands(A, B)
            INPUT_READS.clear()
            D, run = oc.ozaki2_cuda(A, B, target=target, terms=terms, gemm=gemm,
                                    workspace_factor=wf)  # fmt: skip
            A64, B64 = A.astype(np.float64), B.astype(np.float64)
            ref = reference(A64, B64, run.plan.terms, target, crt_samples=4)
            diff = int(np.count_nonzero(float_bits(np.asarray(D)) != float_bits(ref["D"])))
            want_terms = terms
            if terms == "auto":  # the host rule on the reference's statistics
                want_terms = auto_terms("ozaki2", target, k, line_stats(ref["sa"]),
                                        line_stats(ref["sb"]))  # fmt: skip
            r = {"m": m, "k": k, "n": n, "phi": phi, "target": target, "terms": str(terms),
                 "L": run.plan.terms, "gemm": gemm, "mb": run.mb, "nb": run.nb,
                 "row_blocks": -(-m // run.mb), "blocks": -(-n // run.nb),
                 "workspace_bytes": run.workspace_bytes, "q2_match": run.q2 == ref["q2"],
                 "d_diff": diff, "dtype": str(A.dtype),
                 "read_as": sorted(set(INPUT_READS))}  # fmt: skip
            r["terms_match"] = run.plan.terms == want_terms
            r["ok"] = diff == 0 and r["q2_match"] and r["terms_match"]
            r["ok"] &= r["read_as"] == [r["dtype"]]
            if f32:
                emu = ozaki_gemm(A, B, method="ozaki2", fmt="int8", target=target,
                                 terms=run.plan.terms)  # fmt: skip
                r["emulator_diff"] = int(np.count_nonzero(float_bits(np.asarray(D)) !=
                                                          float_bits(emu)))  # fmt: skip
                r["ok"] &= r["emulator_diff"] == 0
            results.append(r)
    return results


def host_barriers() -> dict[str, Any]:
    """The host replay's fiber scheduler: shared-memory exchange across ``__syncthreads``
    sees every thread's write (``uniform`` 0), and a thread that skips a barrier is reported
    (``divergent`` 1) instead of passing silently (on a GPU it would hang)."""
    lib = host_library("f64")
    res = {"uniform": int(lib.barrier_selftest(0)), "divergent": int(lib.barrier_selftest(1))}
    res["ok"] = res == {"uniform": 0, "divergent": 1}
    return res


def host_auto_terms(seed: int = 5) -> dict[str, Any]:
    """``oz2_auto_need`` (host-compiled) through :func:`precision.gemm.ozaki_cuda.
    device_auto_terms` against :func:`auto_terms` on the same statistics: random lines with
    negative, non-divisible exponent sums, norm bounds from 0 (not produced by the statistics
    kernels; clog2 takes it as 1) to 2^57, spreads up to 2000
    binades, all-zero lines, NaN/Inf-bad lines and empty operands, both targets, K from 1 to
    INT8_KMAX."""
    from precision.gemm.ozaki import INT8_KMAX

    rng = np.random.default_rng(seed)

    def stats(n: int) -> LineStats:
        count = rng.integers(0, 3, n) * rng.integers(1, 5000, n)
        emax = rng.integers(-1074, 1024, n)
        spread = np.where(rng.random(n) < 0.2, rng.integers(0, 2001, n), rng.integers(0, 12, n))
        esum = (emax - spread) * count + rng.integers(0, np.maximum(count, 1))
        nfix = np.where(count > 0, rng.integers(1, 2**57, n) >> rng.integers(0, 57, n), 0)
        nfix[:2] = np.where(count[:2] > 0, 1, 0)  # the smallest bound of a nonzero line
        bad = rng.random(n) < 0.1  # (left out of the count, with any statistics)
        return LineStats(emax=emax, esum=esum, count=count, zero=count == 0, bad=bad,
                         nfix=nfix)  # fmt: skip

    def on_device(oc: Any, st: LineStats) -> Any:
        return oc.DeviceStats(
            emax=_h(st.emax.astype(np.int32)), esum=_h(st.esum.astype(np.int64)),
            count=_h(st.count.astype(np.int32)), nfix=_h(st.nfix.astype(np.uint64)),
            bad=_h(st.bad.astype(np.int32)), shift=_h(np.zeros(st.emax.size, np.int64)),
        )  # fmt: skip

    mismatches, cases, counts = 0, 0, set()
    with kernels_on_the_cpu() as oc:
        for target in ("fp64", "fp32"):
            for k in (1, 100, 4096, 65536, INT8_KMAX):
                for na, nb in ((0, 0), (0, 7), (1, 1), (40, 300), (700, 30)):
                    sa, sb = stats(na), stats(nb)
                    got = oc.device_auto_terms(
                        _MockCuPy(), on_device(oc, sa), on_device(oc, sb), target, k
                    )
                    want = auto_terms("ozaki2", target, k, sa, sb)
                    mismatches += int(got != want)
                    cases += 1
                    counts.add(want)
    return {
        "cases": cases,
        "mismatches": mismatches,
        "distinct_counts": sorted(counts),
        "ok": mismatches == 0,
    }


def host_case(n: int, phi: float, target: str, L: int, specials: bool) -> dict[str, Any]:
    """Replay the kernels (residues of A's rows and of B's columns, B's column statistics and
    shifts, both reconstruction readers in column blocks) serially on the CPU and compare
    them with :func:`reference`; the int32 products come from numpy."""
    import ctypes

    lib = host_library("f64")
    A, B = make_operands(n, phi, seed=1000 * n + int(10 * phi) + 1, specials=specials)
    r = reference(A, B, L, target, crt_samples=8)
    moduli = MODULI[:L]
    with kernels_on_the_cpu() as oc:  # the constants exactly as the GPU path packs them
        nl = oc._set_constants(moduli)
    kp = -(-n // 16) * 16
    sa = np.ascontiguousarray(r["s_a"], dtype=np.int64)
    sb = np.ascontiguousarray(r["s_b"], dtype=np.int64)
    ares = np.zeros((L, n, kp), dtype=np.int8)
    lib.residues_rows(_ptr(A), n, n, n, kp, _ptr(sa), L, _ptr(ares))
    bres = np.full((L, kp, kp), 99, dtype=np.int8)
    lib.residues_cols(_ptr(B), n, n, 0, n, kp, kp, _ptr(sb), L, _ptr(bres))
    res_diff = 0
    for li, m in enumerate(moduli):
        ra = np.zeros((n, kp), dtype=np.int64)
        ra[:, :n] = sym_mod(r["ya"], m)
        rb = np.zeros((kp, kp), dtype=np.int64)
        rb[:n, :n] = sym_mod(r["yb"].T, m)
        res_diff += int(np.count_nonzero(ares[li] != ra) + np.count_nonzero(bres[li] != rb))
    st: dict[str, np.ndarray] = {
        "emax": np.full(n, -100000, np.int32), "esum": np.zeros(n, np.uint64),
        "count": np.zeros(n, np.int32), "nfix": np.zeros(n, np.uint64),
        "bad": np.zeros(n, np.int32), "shift": np.zeros(n, np.int64),
    }  # fmt: skip
    lib.stats_cols(_ptr(B), n, n, r["q2"], *(_ptr(st[k]) for k in st))
    stat_diff = int(np.count_nonzero(st["shift"] != r["s_b"]))
    for k in ("emax", "esum", "count", "nfix", "bad"):
        stat_diff += int(np.count_nonzero(st[k].astype(np.int64) != r["sb"][k].astype(np.int64)))
    # oz2_rows_fused (A's statistics, shifts and residues in one kernel), 64 threads per block
    mpf = n + 3  # three padding rows: zero residues, no statistics
    fres = np.full((L, mpf, kp), 99, dtype=np.int8)
    fst: dict[str, np.ndarray] = {
        "emax": np.zeros(n, np.int32), "esum": np.zeros(n, np.int64),
        "count": np.zeros(n, np.int32), "nfix": np.zeros(n, np.uint64),
        "bad": np.zeros(n, np.int32), "shift": np.zeros(n, np.int64),
    }  # fmt: skip
    lib.rows_fused_threaded(_ptr(A), n, n, mpf, kp, r["q2"], *(_ptr(fst[k]) for k in fst), L,
                            _ptr(fres), ctypes.c_uint(64))  # fmt: skip
    stat_diff += int(np.count_nonzero(fst["shift"] != r["s_a"]))
    for k in ("emax", "esum", "count", "nfix", "bad"):
        stat_diff += int(np.count_nonzero(fst[k].astype(np.int64) != r["sa"][k].astype(np.int64)))
    for li, m in enumerate(moduli):
        rf = np.zeros((mpf, kp), dtype=np.int64)
        rf[:n, :n] = sym_mod(r["ya"], m)
        res_diff += int(np.count_nonzero(fres[li] != rf))
    C = np.stack([ares[li].astype(np.float64) @ bres[li].astype(np.float64).T for li in range(L)])
    C32 = np.ascontiguousarray(C.astype(np.int32))
    C8 = np.ascontiguousarray(
        np.stack([sym_mod(C32[li].astype(np.int64), m) for li, m in enumerate(moduli)])
    ).astype(np.int8)
    p, emin_sub, dtype = TARGETS[target]
    hs = [line_stats(x) for x in (r["sa"], r["sb"])]
    bits = np.uint64 if target == "fp64" else np.uint32
    d_diff = []
    nb = max(16, (n // 2) // 16 * 16)  # two or more column blocks
    for i8, planes in ((0, C32), (1, C8)):
        D = np.full((n, n), 7.0, dtype=dtype)
        for c0 in range(0, n, nb):
            nbc = min(nb, n - c0)
            nbp = -(-nbc // 16) * 16
            blk = np.zeros((L, n, nbp), dtype=planes.dtype)
            w = min(nbp, planes.shape[2] - c0)
            blk[:, :, :w] = planes[:, :, c0 : c0 + w]
            lib.recon(_ptr(blk), i8, n, n, nbc, nbp, L, _ptr(sa), _ptr(sb), c0, n, p, emin_sub,
                      nl, int(target == "fp64"), _ptr(D))  # fmt: skip
        apply_specials(D, A, B, hs[0], hs[1], target)
        d_diff.append(int(np.count_nonzero(D.view(bits) != r["D"].view(bits))))
    ok = res_diff == 0 and stat_diff == 0 and d_diff == [0, 0] and r["crt_bad"] == 0
    return {"n": n, "phi": phi, "target": target, "L": L, "specials": specials,
            "res_diff": res_diff, "stat_diff": stat_diff, "d_diff_i32_i8": d_diff,
            "t_over_mb": r["t_over_mb"], "ok": ok}  # fmt: skip
