"""Host-side checks of the split (corrected) wgmma kernels' launch parameters (no GPU)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from precision.kernels import launch, specs
from precision.kernels.tma import fp32_matrix_map

SOURCE = Path(launch.__file__).with_name("gemm_wgmma.cu").read_text()
SMEM_LIMIT = 227 * 1024  # sm_90 dynamic shared memory per block


def _macro(name: str) -> int:
    m = re.search(rf"#define {name} (\d+)", SOURCE)
    assert m, name
    return int(m.group(1))


def test_slot_defaults_mirror_the_kernel_source() -> None:
    assert (
        launch.WG_SPLIT_SLOTS["f16"] == launch.WG_SPLIT_SLOTS["bf16"] == _macro("WG_SPLIT_SLOTS16")
    )
    assert launch.WG_SPLIT_SLOTS["tf32"] == _macro("WG_SPLIT_SLOTS32")


@pytest.mark.parametrize(
    "fmt, macro",
    [("f16", "WG_SPLIT_TBLOCK16"), ("bf16", "WG_SPLIT_TBLOCK16"), ("tf32", "WG_SPLIT_TBLOCK32")],
)
def test_ootomo_k_block_mirrors_the_kernel_source(fmt: str, macro: str) -> None:
    from precision.gemm.schedule import OOTOMO_BLOCK_K, get_schedule

    stages = _macro(macro)  # k-stages per k-block in the kernel
    name = {"f16": "fp16"}.get(fmt, fmt)
    assert stages * specs.split_stage_k(fmt) == OOTOMO_BLOCK_K[name]
    assert get_schedule("corrected", name).k_block == OOTOMO_BLOCK_K[name]
    # the host pads K to whole k-blocks (the kernel traps otherwise), Markidis too
    assert specs.kernel_spec(f"wg_ootomo_{fmt}").gemm_tile[2] == OOTOMO_BLOCK_K[name]
    assert specs.kernel_spec(f"wg_markidis_{fmt}").gemm_tile[2] == OOTOMO_BLOCK_K[name]


def test_tma_box_widths_mirror_the_kernel_source() -> None:
    m = re.search(r"A_BOX_K = FMT == TF32 \? (\d+) : (\d+);", SOURCE)
    assert m, "SplitCfg::A_BOX_K"
    tf32, others = int(m.group(1)), int(m.group(2))
    assert specs.WG_A_BOX["tf32"][0] == tf32
    assert specs.WG_A_BOX["f16"][0] == specs.WG_A_BOX["bf16"][0] == others


@pytest.mark.parametrize("fmt", ["f16", "bf16", "tf32"])
def test_default_shared_memory_fits_and_matches_the_slot_layout(fmt: str) -> None:
    slots = launch.WG_SPLIT_SLOTS[fmt]
    ks = 32 if fmt != "tf32" else 16
    assert specs.split_stage_k(fmt) == ks
    slot = 2 * 128 * 64 + (128 * ks + ks * 128) * 4  # B_hi, B_lo, fp32 A and B staging
    assert slot % 1024 == 0
    assert launch.split_smem_bytes(fmt, slots) == slots * (slot + 16) + 1024
    assert launch.smem_bytes(f"wg_ootomo_{fmt}") <= SMEM_LIMIT


def test_tensor_map_rejects_misaligned_matrices_before_calling_the_driver() -> None:
    with pytest.raises(ValueError, match="16-byte aligned"):
        fp32_matrix_map(0x1004, 128, 128, 128, 8)
    with pytest.raises(ValueError, match="16-byte aligned"):
        fp32_matrix_map(0x1000, 128, 6, 128, 2)  # row pitch 24 bytes
