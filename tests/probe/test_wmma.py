"""WMMA API probes (precision/probe/wmma.py): the probe table, packing, the compare plumbing and
the H200 recordings under tests/data/sm90_wmma (every probe is recorded: a missing or unread
recording fails here, it is not skipped).

The plumbing test builds a throw-away recording in tmp_path whose ``d`` comes from the models
themselves: it checks that compare() reads, replays and counts correctly, nothing about the
hardware. Hardware evidence is only the recorded files (test_recorded_*).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precision.probe import wmma as w
from precision.tensorcore import get_arch

DATA = Path(__file__).parents[1] / "data" / "sm90_wmma"


def test_probe_table_is_the_kernel_table_of_the_cuda_source():
    _, lines = w.kernel_lines()
    assert list(lines) == [p.kernel for p in w.PROBES]
    for p in w.PROBES:
        m, n, k = p.shape
        assert f"{p.kernel}, {m}, {n}, {k}," in lines[p.kernel]


def test_every_probe_has_at_least_100k_outputs():
    for p in w.PROBES:
        m, n, _ = p.shape
        assert p.tiles * m * n >= 100_000, p.name


def test_sub_byte_packing_along_k():
    rng = np.random.default_rng(0)
    x4 = rng.integers(0, 16, size=(3, 8, 32), dtype=np.uint8)
    p4 = w._pack_k(x4, 2)
    assert p4.shape == (3, 8, 16)
    assert (p4 & 0xF == x4[..., 0::2]).all() and (p4 >> 4 == x4[..., 1::2]).all()
    x1 = rng.integers(0, 2, size=(3, 8, 128), dtype=np.uint8)
    p1 = w._pack_k(x1, 8)
    assert p1.shape == (3, 8, 16)
    assert (np.unpackbits(p1, axis=-1, bitorder="little") == x1).all()
    assert ((p1[..., 0] >> 3) & 1 == x1[..., 3]).all()


def test_device_operands_layouts():
    p = w.get_probe("f16_f32_m32n8k16")
    inp = w.inputs(p)
    a, b = w.device_operands(p, inp)
    assert a.shape == (p.tiles, 32, 16) and b.shape == (p.tiles, 8, 16)  # B column-major
    assert (b == inp.b.transpose(0, 2, 1)).all()
    brow = w.get_probe("f16_f32_m16n16k16_brow")
    inp = w.inputs(brow)
    assert (w.device_operands(brow, inp)[1] == inp.b).all()


def test_sm90_wmma_instruction_data():
    sm90 = get_arch("sm90")
    tf32 = sm90.instruction("tf32", "fp32", op="wmma")
    assert (tf32.block, tf32.frac_bits, tf32.shape) == (4, 25, (16, 16, 8))
    assert sm90.instruction("tf32", "fp32", op="mma").block == 8
    f16 = sm90.instruction("fp16", "fp16", op="wmma")
    assert (f16.block, f16.e_zero, f16.out_rounding) == (16, -21, "rne")
    assert sm90.instruction("int8", "int32", op="wmma").out_rounding == "wrap"


@pytest.mark.parametrize(
    "name", ["f16_f16_m8n32k16", "tf32_f32_m16n16k8", "s4_s32_m8n8k32", "b1_s32_m8n8k128_xor"]
)
def test_compare_plumbing_on_a_throwaway_recording(tmp_path, monkeypatch, name):
    monkeypatch.setattr(w, "MIN_OUTPUTS", 3000)
    p = w.get_probe(name)
    inp = w.inputs(p)
    ms = w.models(p, inp.a, inp.b, inp.c)
    first = next(iter(ms))
    np.savez_compressed(
        tmp_path / f"{name}.npz",
        a=inp.a,
        b=inp.b,
        c=inp.c,
        d=ms[first],
        kind=inp.kind,
        kinds=np.array(inp.kinds),
        ptx=np.array(p.ptx),
    )
    res = w.compare(tmp_path)
    assert list(res) == [name]
    m, n, _ = p.shape
    total = p.tiles * m * n
    assert res[name][first]["all"] == (total, total)
    assert sum(v[1] for k, v in res[name][first].items() if k != "all") == total


# ------------------------------------------------------------------- recorded hardware outputs

#: The model each recording is expected to follow (the arch.py sm90 wmma data or exact integer
#: arithmetic). f64: the PTX ISA's "identical to an f64 FMA" read as a chain in increasing k.
EXPECTED = {
    p.name: (
        "mma(op='wmma')"
        if p.a in ("f16", "bf16", "tf32")
        else "dmma.fma_chain"
        if p.a == "f64"
        else "exact b1"
        if p.a == "b1"
        else "exact"
    )
    for p in w.PROBES
}


@pytest.fixture(scope="module")
def recorded():
    assert DATA.is_dir(), f"{DATA}: the H200 WMMA recording is missing"
    return w.compare(DATA)


def test_every_probe_is_recorded_and_compared(recorded):
    """compare() reads every probe's recording: one it drops would otherwise go unchecked."""
    assert list(recorded) == [p.name for p in w.PROBES]


def test_recorded_manifest():
    man = json.loads((DATA / "manifest.json").read_text())
    assert man["compute_capability"] == 90
    assert set(man["instructions"]) == {p.name for p in w.PROBES}
    assert set(man["ptxas_verdicts"].values()) == {"accepted"}
    for name, entry in man["instructions"].items():
        # recorded with --min-outputs 50000: 51,200 outputs each keeps tests/data within the
        # size the GPU machine accepts (tests/data/sm90_wmma/README.md)
        assert entry["outputs"] >= 50_000, name


@pytest.mark.parametrize("name", [p.name for p in w.PROBES])
def test_recorded_matches_its_model(recorded, name):
    assert name in recorded, f"{name}: no recording read under {DATA}"
    eq, n = recorded[name][EXPECTED[name]]["all"]
    assert n >= 50_000
    assert eq == n, recorded[name]
