"""The probe catalog refers to the one instruction data (precision.tensorcore.arch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision.probe import wgmma as wp
from precision.probe.catalog import PROBES, Probe, get_probe
from precision.tensorcore import get_arch

ROOT = Path(__file__).parents[2] / "precision"
CUDA_TEXT = "\n".join(p.read_text() for p in sorted(ROOT.rglob("*.cu*")))


@pytest.mark.parametrize("name", list(PROBES))
def test_probe_takes_ptx_shape_and_formats_from_the_sm90_instruction(name):
    p = get_probe(name)
    ins = p.instruction
    assert ins is get_arch("sm90").instruction(ins.a_fmt, ins.acc_fmt, op="mma")
    assert p.k == ins.shape[2]
    assert p.ptx == (ins.satfinite_ptx if p.satf else ins.ptx)
    assert p.ptx.startswith("mma.sync.aligned.") and ("satfinite" in p.ptx) == p.satf
    # the probe kernels' inline PTX (CUDA sources are separate files) is this same string
    assert p.ptx in CUDA_TEXT, p.ptx


@pytest.mark.parametrize("name", list(wp.WGMMA))
def test_wgmma_probe_ptx_is_the_sm90_wgmma_instruction(name):
    ins = wp.wgmma_instruction(name)
    assert ins.family == "wgmma" and ins.ptx in CUDA_TEXT, ins.ptx


def test_unknown_probe_lists_the_known_names():
    with pytest.raises(ValueError, match="unknown probe 'nope'; expected one of"):
        get_probe("nope")
    assert all(isinstance(p, Probe) for p in PROBES.values())
