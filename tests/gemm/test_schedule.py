"""Schedules: structure, the k-slot permutations against the PTX fragment layouts, errors."""

from __future__ import annotations

import numpy as np
import pytest

from precision.gemm import all_schedules, get_schedule
from precision.gemm.schedule import INSTRUCTION_K, LO_SCALE_LOG2, Add, Mma, k_permutation

#: formats of the mma.sync GEMM kernels (the wgmma ones keep k in natural order)
MMA_SYNC_FORMATS = ["e4m3", "e5m2", "int8"]


@pytest.mark.parametrize("fmt", MMA_SYNC_FORMATS)
def test_k_permutation_is_a_permutation(fmt):
    perm = k_permutation(fmt)
    assert sorted(perm) == list(range(INSTRUCTION_K[fmt]))


def _ptx_a_slots(fmt: str, q: int) -> list[int]:
    """k-slots of the A fragment held by a lane with lane % 4 == q, row groupID, in register
    order (PTX ISA fragment layout of m16n8k32 for 8-bit inputs)."""
    assert INSTRUCTION_K[fmt] == 32
    return [4 * q + i for i in range(4)] + [16 + 4 * q + i for i in range(4)]


@pytest.mark.parametrize("fmt", MMA_SYNC_FORMATS)
def test_k_permutation_matches_kernel_loads(fmt):
    # The kernel's lane q loads physical k = q + 4j (j = 0, 1, ...) and packs them in register
    # order into the slots of its PTX fragment; the schedule must say exactly that.
    perm = k_permutation(fmt)
    for q in range(4):
        slots = _ptx_a_slots(fmt, q)
        assert [perm[s] for s in slots] == [q + 4 * j for j in range(len(slots))]


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "tf32"])
def test_k_permutation_refuses_the_wgmma_formats(fmt):
    with pytest.raises(ValueError, match="natural order"):
        k_permutation(fmt)


def test_every_kernel_name_is_unique_and_in_the_source():
    from pathlib import Path

    import precision.kernels

    kdir = Path(precision.kernels.__file__).parent
    mma_src = (kdir / "gemm_mma.cu").read_text()
    names = [s.kernel for s in all_schedules()]
    assert len(names) == len(set(names))
    for s in all_schedules():
        src = (kdir / s.source).read_text()
        if s.source == "gemm_wgmma.cu":
            macro = "WG_PLAIN_KERNEL" if s.method in ("plain", "satf") else "WG_SPLIT_KERNEL"
            assert f"{macro}({s.kernel}," in src
            assert s.k_perm == tuple(range(s.k_block))  # operands K-major, natural k order
        else:
            assert f"PREC_GEMM_KERNEL({s.kernel}," in src
        if s.strict_kernel:  # the per-step clamp kernel is always the mma.sync one
            assert f"PREC_GEMM_KERNEL({s.strict_kernel}," in mma_src


def test_corrected_ootomo_structure():
    s = get_schedule("corrected", "f16", "ootomo")
    assert s.split is not None and s.split.lo_scale_log2 == 11 == LO_SCALE_LOG2["fp16"]
    hh = s.step[0]
    assert isinstance(hh, Mma) and hh.c == "zero" and (hh.a, hh.b) == ("A_hi", "B_hi")
    # f16: a k-block of 128 k = four k-stages of 32; t chains over the whole block, the
    # corrections run per k-stage, and one fp32 add of t ends the block
    assert s.k_block == 128
    stages = [(lo, lo + 32) for lo in range(0, 128, 32)]
    t_ops = [o for o in s.step if isinstance(o, Mma) and o.dst == "t"]
    assert [(o.c, o.k_part) for o in t_ops] == [("zero", stages[0])] + [
        ("t", p) for p in stages[1:]
    ]
    assert [(o.a, o.b, o.k_part) for o in s.step if isinstance(o, Mma) and o.dst == "corr"] == [
        x for p in stages for x in (("A_lo", "B_hi", p), ("A_hi", "B_lo", p))
    ]
    assert isinstance(s.step[-1], Add) and s.step[-1].dst == "main"
    assert "A_lo" not in [o.a for o in s.step if isinstance(o, Mma) and o.b == "B_lo"]
    assert not s.ftz and not s.fma_contraction
    assert "2^11" in s.describe()


def test_markidis_is_unscaled_single_chain():
    s = get_schedule("corrected", "tf32", "markidis")
    assert s.split.lo_scale_log2 == 0
    assert all(isinstance(o, Mma) and o.dst == o.c == "acc" for o in s.step)


def test_aliases_and_errors():
    assert get_schedule("plain", "half").fmt == "fp16"
    assert get_schedule("plain", np.float16).fmt == "fp16"
    with pytest.raises(ValueError, match="method="):
        get_schedule("fast", "f16")
    with pytest.raises(ValueError, match="corrected"):
        get_schedule("corrected", "e4m3")
    with pytest.raises(ValueError, match="correction="):
        get_schedule("corrected", "f16", "kahan")
    with pytest.raises(ValueError, match="fmt="):
        get_schedule("plain", "fp64")
