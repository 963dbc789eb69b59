"""wgmma.mma_async (HGMMA/QGMMA) versus mma.sync on recorded H200 outputs (tests/data/sm90_wgmma).

The counts asserted here are what the recording shows (see docs/wgmma.md); nothing runs on a GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precision.probe import wgmma as wp
from precision.probe.capture import load_arrays
from precision.tensorcore import get_arch

DATA = Path(__file__).parents[1] / "data" / "sm90_wgmma"


@pytest.fixture(scope="module")
def results():
    assert DATA.is_dir(), f"{DATA}: the H200 wgmma recording is missing"
    res = wp.compare(DATA)
    assert list(res) == list(wp.WGMMA)  # every recording read, none dropped
    return res


def test_manifest_layout_check_passed():
    man = json.loads((DATA / "manifest.json").read_text())
    for name, entry in man["instructions"].items():
        assert entry["recorded"], name
        assert any(v.startswith("0/") for v in entry["layout_check"].values()), name
        assert entry["warp_copies_disagree"] == 0, name


@pytest.mark.parametrize("name", ["f16_f32", "bf16_f32", "tf32_f32"])
def test_16bit_and_tf32_wgmma_equals_mma_sync(results, name):
    row = results[name]
    eq, n = row["wgmma_vs_mma_sync_hw"]["all"]
    assert eq == n and n > 20000
    eq, n = row["wgmma_vs_precision_mma"]["all"]
    assert eq == n


def test_mma_sync_recorded_alongside_matches_precision_mma(results):
    # the mma.sync outputs recorded on the same inputs are reproduced by precision.mma
    for name in ("e4m3_f32", "e5m2_f32"):
        r = load_arrays(DATA / f"wgmma_{name}.npz")
        assert (r["d_mma"] == wp.mma_sync_model(name, r["a"], r["b"], r["c"])).all(), name


# What the recording shows for fp8 (seed 11): wgmma == mma.sync on only these many outputs.
FP8_SAME_AS_MMA_SYNC = {"e4m3_f32": (5802, 20864), "e5m2_f32": (8065, 20864)}


ALL = ["f16_f32", "bf16_f32", "tf32_f32", "e4m3_f32", "e5m2_f32"]


@pytest.mark.parametrize("name", ALL)
def test_mma_op_wgmma_reproduces_every_recorded_output(results, name):
    # precision.mma(..., arch="sm90", op="wgmma") = the sm90 wgmma instruction data, bit for bit
    row = results[name]["wgmma_vs_precision_mma_wgmma"]
    eq, n = row["all"]
    assert eq == n and n > 20000
    assert all(e == t and t > 0 for k, (e, t) in row.items() if k != "all"), row


def test_wgmma_entries_of_sm90_name_their_recordings():
    sm90 = get_arch("sm90")
    man = json.loads((DATA / "manifest.json").read_text())
    for name in ALL:
        fmt = name.split("_")[0]
        ins = sm90.instruction(fmt, "f32", op="wgmma")
        assert ins.ptx == man["instructions"][name]["wgmma_ptx"], name
        assert f"tests/data/sm90_wgmma/wgmma_{name}.npz" in ins.evidence, name


@pytest.mark.parametrize("name", ["e4m3_f32", "e5m2_f32"])
def test_fp8_wgmma_is_one_32_product_block_f13_e8m13(results, name):
    row = results[name]
    ins = get_arch("sm90").instruction(name[:4], "fp32", op="wgmma")
    assert (ins.block, ins.frac_bits, ins.e_zero, ins.out_rounding) == (32, 13, -133, "rz_e8m13")
    assert (
        row["wgmma_vs_precision_mma_wgmma"]["all"][0]
        == row["wgmma_vs_precision_mma_wgmma"]["all"][1]
    )
    assert row["wgmma_vs_mma_sync_hw"]["all"] == FP8_SAME_AS_MMA_SYNC[name]
    assert row["wgmma_vs_precision_mma"]["all"] == FP8_SAME_AS_MMA_SYNC[name]
    # on plain normal data the two instructions almost never agree
    eq, n = row["wgmma_vs_mma_sync_hw"]["normal"]
    assert eq < 0.01 * n


@pytest.mark.parametrize("name", ["e4m3_f32", "e5m2_f32"])
@pytest.mark.parametrize(
    "variant", [{"frac_bits": 12}, {"frac_bits": 14}, {"block": 16}, {"rounding": "rz"}]
)
def test_fp8_neighbouring_models_do_not_fit(name, variant):
    r = load_arrays(DATA / f"wgmma_{name}.npz")
    got = wp.fp8_block_model(name, r["a"], r["b"], r["c"], **variant)
    assert (got != r["d"]).sum() > 1000
