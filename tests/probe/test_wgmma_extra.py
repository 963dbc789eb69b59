"""wgmma extras (f16 accumulate, mixed fp8, s8/u8): inputs, instruction data, compare plumbing,
and the H200 recordings (``record --extra``) in tests/data/sm90_wgmma_extra: every extra is
recorded, so a missing or unread recording fails here, it is not skipped.

The plumbing test writes a throw-away recording whose ``d`` comes from a model (tmp_path only):
it checks reading, replaying and counting, nothing about the hardware.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precision.probe import wgmma as wp
from precision.tensorcore import get_arch

DATA = Path(__file__).parents[1] / "data" / "sm90_wgmma_extra"


def test_extra_kernels_exist_in_the_cuda_source():
    src = wp.SOURCE.read_text()
    for name, ex in wp.EXTRA.items():
        assert f"PROBE_REGS({ex.kernel}," in src, name
        assert wp._wgmma_ptx_of(ex) in src, name


def test_extra_inputs_have_100k_outputs_and_operand_formats():
    for name, ex in wp.EXTRA.items():
        a, b, c, kind, kinds = wp.extra_inputs(name)
        assert c.size >= 100_000, name
        assert a.shape[1:] == (16, ex.k) and b.shape[1:] == (ex.k, 8), name
        assert c.dtype == (np.uint16 if ex.acc == "fp16" else np.uint32), name
        assert kind.max() == len(kinds) - 1, name


def test_sm90_wgmma_extra_instruction_data():
    sm90 = get_arch("sm90")
    f16 = sm90.instruction("fp16", "fp16", op="wgmma")
    assert (f16.block, f16.frac_bits, f16.e_zero, f16.out_rounding) == (16, 25, -21, "rne")
    fp8 = sm90.instruction("e4m3", "fp16", b_fmt="e5m2", op="wgmma")
    assert (fp8.block, fp8.frac_bits, fp8.shape) == (32, 13, (64, 8, 32))
    s8 = sm90.instruction("int8", "int32", op="wgmma")
    assert s8.out_rounding == "wrap" and s8.ptx.endswith(".s32.s8.s8")
    u8 = sm90.instruction("uint8", "int32", op="wgmma")
    assert u8.out_rounding == "wrap" and u8.ptx.endswith(".s32.u8.u8")


@pytest.mark.parametrize("name", ["e4m3_f16", "e5m2e4m3_f32", "u8_s32"])
def test_compare_extra_plumbing_on_a_throwaway_recording(tmp_path, name):
    a, b, c, kind, kinds = wp.extra_inputs(name)
    a, b, c, kind = a[::8], b[::8], c[::8], kind[::8]
    ms = wp.extra_models(name, a, b, c)
    first = next(iter(ms))
    np.savez_compressed(
        tmp_path / f"wgmma_{name}.npz", a=a, b=b, c=c, d=ms[first], kind=kind, kinds=np.array(kinds)
    )
    res = wp.compare_extra(tmp_path)
    assert list(res) == [name]
    assert res[name][first]["all"] == (c.size, c.size)
    assert sum(v[1] for k, v in res[name][first].items() if k != "all") == c.size


# ------------------------------------------------------------------- recorded hardware outputs


@pytest.fixture(scope="module")
def recorded():
    missing = [n for n in wp.EXTRA if not (DATA / f"wgmma_{n}.npz").exists()]
    assert not missing, f"no recording of {missing} under {DATA}"
    return wp.compare_extra(DATA)


def test_every_extra_is_recorded_and_compared(recorded):
    """compare_extra() reads every extra's recording: one it drops would otherwise go
    unchecked (and the layout-check loop below would pass on none)."""
    assert list(recorded) == list(wp.EXTRA)


@pytest.mark.parametrize("name", ["s8_s32", "u8_s32"])
def test_recorded_integer_wgmma_is_exact(recorded, name):
    assert name in recorded, f"{name}: no recording read under {DATA}"
    for model in ("exact", "precision.mma(op='wgmma')"):
        eq, n = recorded[name][model]["all"]
        assert n >= 100_000 and eq == n, model


def test_the_later_run_is_kept_apart_in_the_manifest():
    """The two mixed-fp8 -> f16 extras came from a second run (2026-11-27): its provenance is
    later_runs[0], and the first run's top level lists only its own seven kernels."""
    man = json.loads((DATA / "manifest.json").read_text())
    later = {n for n, e in man["instructions"].items() if e.get("run") == "later_runs[0]"}
    assert later == {"e4m3e5m2_f16", "e5m2e4m3_f16"} and len(man["later_runs"]) == 1
    run = man["later_runs"][0]
    assert run["gpu"] == "NVIDIA H200" and run["git_commit"] == "1816c5c"
    assert {f"wgmma_{n}" for n in later} <= set(run["sass_opcodes"])  # the whole file's
    assert later.isdisjoint(n.removeprefix("wgmma_") for n in man["sass_opcodes"])


def test_recorded_extras_passed_the_layout_check(recorded):
    man = json.loads((DATA / "manifest.json").read_text())
    for name in recorded:
        entry = man["instructions"][name]
        assert entry["recorded"] and entry["warp_copies_disagree"] == 0, name


@pytest.mark.parametrize(
    "name",
    [
        "f16_f16",
        "e4m3_f16",
        "e5m2_f16",
        "e4m3e5m2_f16",
        "e5m2e4m3_f16",
        "e4m3e5m2_f32",
        "e5m2e4m3_f32",
    ],
)
def test_recorded_float_wgmma_extra_matches_the_sm90_wgmma_data(recorded, name):
    """f16 -> f16 as mma.sync (blocks of 16, RNE fp16); fp8 -> f16 as the fp8 wgmma block (32
    products, F = 13) rounded once to nearest fp16; mixed fp8 -> f32 and -> f16 as
    same-format fp8 wgmma with each operand decoded in its own format (the mixed -> f16 pair
    recorded 2026-11-27): every recorded output, bit for bit."""
    eq, n = recorded[name]["precision.mma(op='wgmma')"]["all"]
    assert n >= 100_000 and eq == n, recorded[name]
