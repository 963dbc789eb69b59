"""Time build variants of the corrected (split) wgmma kernels on a GPU.

``gemm_wgmma.cu`` exposes its tuning knobs as macros (``WG_SPLIT_SLOTS16``,
``WG_SPLIT_SLOTS32``: shared-memory ring slots; ``WG_SPLIT_UNROLL_B``: producer loop unrolling;
``WG_SPLIT_PRODUCER_REGS``). This tool builds one cubin per variant with ``-D`` flags, times
each kernel on n x n x n uniform(-1, 1) inputs (CUDA events, median of ``--repeats`` launches,
kernel only: the inputs are already padded fp32 device arrays) and checks that every variant's
output has the same bits as the first variant's: the knobs change the speed, never the
schedule. A developer tool; the benchmark of record is ``precision bench-gemm``.

    python -m experiments.tune_split --n 8192 --variant '' --variant SLOTS16=3,SLOTS32=5
"""

from __future__ import annotations

import argparse
import sys

KNOBS = ("SLOTS16", "SLOTS32", "UNROLL_B", "PRODUCER_REGS")
DEFAULT_KERNELS = ("wg_ootomo_f16", "wg_ootomo_tf32")


def parse_variant(text: str) -> dict[str, int]:
    """``"SLOTS16=3,PRODUCER_REGS=48"`` -> {"SLOTS16": 3, "PRODUCER_REGS": 48}; unknown knobs are
    an error."""
    out: dict[str, int] = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        if key not in KNOBS or not value.lstrip("-").isdigit():
            raise SystemExit(f"--variant {text!r}: expected KNOB=INT with KNOB in {KNOBS}")
        out[key] = int(value)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.tune_split", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--variant", action="append", default=None,
                   help="KNOB=INT[,KNOB=INT...]; '' is the defaults (repeatable)")
    p.add_argument("--kernel", action="append", default=None)
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args(argv)
    variants = [parse_variant(v) for v in (args.variant or [""])]  # bad knobs: before any work

    import cupy as cp
    import numpy as np

    from precision.gemm.schedule import all_schedules
    from precision.kernels.build import build_cubin
    from precision.kernels.launch import (
        WG_SPLIT_SLOTS,
        WG_SPLIT_THREADS,
        split_smem_bytes,
        split_tensor_maps,
    )

    n = args.n
    if n % 128:
        raise SystemExit(f"--n {n}: must be a multiple of 128 (no padding here)")
    kernels = args.kernel or list(DEFAULT_KERNELS)
    schedules = {s.kernel: s for s in all_schedules()}
    rng = np.random.default_rng(0)
    A = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    B = cp.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    reference: dict[str, object] = {}
    print(f"n={n}  TFLOP/s = 2 n^3 / median kernel time")
    for knobs in variants:
        flags = tuple(f"-DWG_SPLIT_{k}={v}" for k, v in knobs.items())
        module = cp.RawModule(path=str(build_cubin("gemm_wgmma.cu", arch="sm_90a",
                                                   extra_flags=flags)))
        for name in kernels:
            split = schedules[name].split
            s = split.lo_scale_log2 if split else 0
            fn = module.get_function(name)
            fmt = name.rsplit("_", 1)[1]
            bits = "32" if fmt == "tf32" else "16"
            smem = split_smem_bytes(fmt, knobs.get("SLOTS" + bits, WG_SPLIT_SLOTS[fmt]))
            fn.max_dynamic_shared_size_bytes = smem
            D = cp.empty((n, n), dtype=cp.float32)
            launch_args = (split_tensor_maps(fmt, A, B), D, cp.int32(n), cp.int32(n),
                           cp.int32(n), cp.float32(2.0**s), cp.float32(2.0**-s))
            times = []
            for i in range(args.repeats + 2):
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                fn(((n // 128) ** 2,), (WG_SPLIT_THREADS,), launch_args, shared_mem=smem)
                stop.record()
                stop.synchronize()
                if i >= 2:
                    times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
            t = float(np.median(times))
            out = D.view(cp.uint32)
            same = "reference" if name not in reference else (
                "identical" if bool(cp.array_equal(out, reference[name])) else "DIFFERENT")
            reference.setdefault(name, out.copy())
            print(f"{name:16s} {','.join(f'{k}={v}' for k, v in knobs.items()) or 'defaults':45s}"
                  f" {2 * n**3 / t / 1e12:7.1f} TFLOP/s  {same}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
