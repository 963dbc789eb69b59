"""Every CUDA GEMM kernel on fp32 inputs holding +-Inf, NaN, a value beyond fp16's range, an
fp32 subnormal and a finite product beyond FLT_MAX, recorded on an H200
(tests/data/gemm/special_inputs_h200.npz, 18 kernels x 32 x 32 outputs; made by
results/h200/gemm_special_inputs_2026-11-27/record_special_inputs.py at 8e8fe14). The
emulator must give every output bit for bit; the recorded outputs also pin what each method
does with special values (docs/gemm.md, "Special values")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precision.gemm.emulator import run_schedule
from precision.gemm.record import kernel_inputs
from precision.gemm.schedule import all_schedules

DATA = Path(__file__).parents[1] / "data" / "gemm" / "special_inputs_h200.npz"
SCHEDULES = {s.kernel: s for s in all_schedules()}


@pytest.fixture(scope="module")
def recorded() -> dict[str, np.ndarray]:
    with np.load(DATA) as z:
        return {k: z[k] for k in z.files}


def inputs(recorded: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return recorded["A"].view(np.float32), recorded["B"].view(np.float32)


def test_the_recording_covers_every_kernel_and_its_special_inputs(recorded):
    meta = json.loads(str(recorded["meta"]))
    assert meta["device"].startswith("NVIDIA H200") and meta["git_commit"]
    assert {k[: -len("/D")] for k in recorded if k.endswith("/D")} == set(SCHEDULES)
    A, B = inputs(recorded)
    assert np.isposinf(A).sum() >= 3 and np.isneginf(A).sum() >= 2 and np.isnan(A).sum() == 1
    assert np.isposinf(B).sum() == 1 and np.isneginf(B).sum() == 1 and np.isnan(B).sum() == 1
    assert (np.abs(A) == np.float32(70000.0)).any() and ((A != 0) & (np.abs(A) < 2**-126)).any()


@pytest.mark.parametrize("kernel", sorted(SCHEDULES))
def test_the_emulator_gives_the_recorded_bits(recorded, kernel):
    A, B = inputs(recorded)
    with np.errstate(over="ignore"):  # (int8 kernels' inputs x 64: 3e38 -> Inf, as recorded)
        Ak, Bk = kernel_inputs(A, B, SCHEDULES[kernel])
    got = run_schedule(Ak, Bk, SCHEDULES[kernel]).view(np.uint32)
    want = recorded[f"{kernel}/D"]
    assert np.array_equal(got, want), f"{np.count_nonzero(got != want)} of {want.size} differ"


def hardware(recorded: dict[str, np.ndarray], kernel: str) -> np.ndarray:
    return recorded[f"{kernel}/D"].view(np.float32)


def rounded(x: np.ndarray, fmt: str) -> np.ndarray:
    """``x`` rounded to ``fmt`` (RNE; tf32 keeps fp32's range), as float64."""
    import ml_dtypes

    if fmt == "tf32":
        return x.astype(np.float64)  # (only the rows' specials and signs matter below)
    dtype = np.float16 if fmt == "f16" else ml_dtypes.bfloat16
    with np.errstate(over="ignore"):
        return x.astype(dtype).astype(np.float64)


@pytest.mark.parametrize("fmt", ["f16", "bf16", "tf32"])
def test_plain_follows_ieee_and_corrected_turns_an_inf_input_into_nan(recorded, fmt):
    """What the hardware gave, read against IEEE arithmetic. Plain: in rows 0-4 (a +Inf, a
    -Inf, a NaN, Inf * 0, +Inf and -Inf in A; finite sums otherwise) every output is NaN or
    a signed Inf exactly where the float64 product of the rounded inputs is. Corrected
    splits an infinite input into hi = Inf and lo = Inf - Inf = NaN, so every output of
    those rows, and of the columns holding B's Inf and NaN, is NaN (docs/gemm.md)."""
    A, B = inputs(recorded)
    with np.errstate(invalid="ignore"):
        ieee = rounded(A, fmt)[:5] @ rounded(B, fmt)
    plain = hardware(recorded, f"wg_plain_{fmt}")[:5]
    assert np.isnan(ieee).sum() > 40 and np.isinf(ieee).sum() > 40  # (both kinds occur)
    assert np.array_equal(np.isnan(plain), np.isnan(ieee))
    assert np.array_equal(plain[np.isinf(ieee)], ieee[np.isinf(ieee)])
    for correction in ("ootomo", "markidis"):
        corrected = hardware(recorded, f"wg_{correction}_{fmt}")
        assert np.isnan(corrected[:5]).all() and np.isnan(corrected[:, [1, 2, 6]]).all()
        assert np.isfinite(corrected[8:, 8:]).all()  # (no special input reaches these)


def test_satf_and_narrow_formats_have_no_inf(recorded):
    """satf clamps every MMA's Inf to +-FLT_MAX and NaN to +0; e4m3/e5m2 inputs saturate to
    their MAX_NORM (cvt.rn.satfinite) and int8 to [-128, 127] with NaN -> 0, so no Inf
    reaches their outputs; only satf and int8 also have no NaN."""
    for kernel in SCHEDULES:
        D = hardware(recorded, kernel)
        assert not np.isinf(D).any() or kernel.startswith(("wg_plain", "wg_ootomo", "wg_markidis"))
        if "satf" in kernel or kernel.endswith("int8"):
            assert not np.isnan(D).any(), kernel
        elif kernel in ("gemm_plain_e4m3", "gemm_plain_e5m2"):  # NaN stays NaN (row 2)
            assert np.isnan(D[2]).all() and not np.isnan(D[8:, 8:]).any(), kernel
    for kernel in ("wg_satf_f16", "wg_satf_bf16", "wg_satf_tf32"):
        assert hardware(recorded, kernel)[0, 0] == -np.finfo(np.float32).max
