"""The GPU engine (``precision.mma(..., device="gpu")``) against recorded hardware outputs.

tests/probe/test_mma_sync_recorded.py replays the hand-written sm_90 probes (tests/data/sm90)
through the GPU engine. This file does the same for every other recording whose instruction
the engine runs:
- the fragment-packed ``mma.sync`` families of the H200 (tests/data/sm90_mma);
- its ``wgmma`` recordings (tests/data/sm90_wgmma, and tests/data/sm90_wgmma_extra: f16
  accumulators, mixed fp8 into f16 and f32, s8 and u8);
- the published outputs of V100 … B200 (tests/data/published), each through that GPU's
  architecture model.

Which instructions the engine runs is decided on the CPU, from ``gpu_engine.unsupported``,
and pinned by the first test: since the engine gained f64, that is all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precision.probe import packed
from precision.probe import published as pb
from precision.probe import wgmma as wp
from precision.probe.capture import load_arrays, match_counts
from precision.probe.generic import PROBES
from precision.tensorcore import get_arch
from precision.tensorcore.gpu_engine import unsupported

DATA = Path(__file__).parents[1] / "data"
#: Outputs per recording: 51,200 (2026-11-23), 25,600 or 12,800 (the LATER probes, 2026-11-27).
MMA_MANIFEST = json.loads((DATA / "sm90_mma" / "manifest.json").read_text())

PACKED = [p for p in PROBES if unsupported(p.instruction) is None]
WGMMA = [n for n in wp.WGMMA if unsupported(wp.wgmma_instruction(n)) is None]
WGMMA_EXTRA = list(wp.EXTRA)


def _recipe_instruction(r: pb.Recipe):
    return get_arch(r.arch).instruction(r.fmt, r.out, b_fmt=r.fmt, op=r.op)


PUBLISHED = [
    r
    for r in pb.RECIPES.values()
    if r.mma and not r.xfail and unsupported(_recipe_instruction(r)) is None
]


def test_which_recordings_the_gpu_engine_replays():
    """Runs on the CPU: the sets the GPU tests below cover."""
    assert len(PACKED) == len(PROBES) == 42  # every packed family, f64 included
    assert WGMMA == ["f16_f32", "bf16_f32", "tf32_f32", "e4m3_f32", "e5m2_f32"]
    assert len(WGMMA_EXTRA) == 9
    assert len(PUBLISHED) == len(pb.RECIPES) == 48


@pytest.mark.gpu
@pytest.mark.parametrize("probe", PACKED, ids=lambda p: p.name)
def test_packed_sm90_recording_on_the_gpu_engine(probe):
    rec = packed.load(DATA / "sm90_mma" / f"{probe.name}.npz")
    ok = packed.matches(probe, rec, packed.emulate(probe, rec, device="gpu"))
    assert ok.size == MMA_MANIFEST["instructions"][probe.name]["outputs"] >= 12_800
    per = ok.reshape(ok.shape[0], -1)
    bad = {k: int((~per[rec.kind == i]).sum()) for i, k in enumerate(rec.kinds)}
    assert not any(bad.values()), bad


@pytest.mark.gpu
@pytest.mark.parametrize("name", WGMMA)
def test_wgmma_recording_on_the_gpu_engine(name):
    r = load_arrays(DATA / "sm90_wgmma" / f"wgmma_{name}.npz")
    got = wp.wgmma_model(name, r["a"], r["b"], r["c"], device="gpu")
    eq, n = match_counts(r["d"], got, r["kind"], r["kinds"])["all"]
    assert n > 20_000 and eq == n, f"{name}: {eq}/{n} outputs of the GPU engine match"


@pytest.mark.gpu
@pytest.mark.parametrize("name", WGMMA_EXTRA)
def test_wgmma_extra_recording_on_the_gpu_engine(name):
    r = load_arrays(DATA / "sm90_wgmma_extra" / f"wgmma_{name}.npz")
    got = wp.extra_models(name, r["a"], r["b"], r["c"], device="gpu")["precision.mma(op='wgmma')"]
    eq, n = match_counts(r["d"], got, r["kind"], r["kinds"])["all"]
    assert n > 20_000 and eq == n, f"{name}: {eq}/{n} outputs of the GPU engine match"


@pytest.mark.gpu
@pytest.mark.parametrize("recipe", PUBLISHED, ids=lambda r: r.name)
def test_published_file_on_the_gpu_engine(recipe: pb.Recipe):
    pub = pb.load(pb.path_of(recipe.gpu, recipe.fmt))
    got = pb.replay(pub, recipe, via="gpu")
    want = pub.d[recipe.out]
    assert want.size == 5000
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{recipe.name}: {want.size - bad.size}/{want.size} outputs match"
