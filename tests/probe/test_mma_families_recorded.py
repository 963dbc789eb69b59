"""Every mma.sync family beyond tests/data/sm90, against its H200 recording (tests/data/sm90_mma).

Recorded with the fragment-packed probes (precision.probe.packed, 51,200 outputs per
instruction over six float or three integer data kinds); replayed here through
``precision.mma(..., shape=, bitop=, b_fmt=)``: every output must match bit for bit, f64 NaN
payloads included (precision.tensorcore.dmma_nan).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precision.probe import packed
from precision.probe.generic import LATER, PROBES

DATA = Path(__file__).parents[1] / "data" / "sm90_mma"


MANIFEST = json.loads((DATA / "manifest.json").read_text())


def test_manifest_covers_every_probe_on_an_h200():
    man = MANIFEST
    assert man["gpu"] == "NVIDIA H200" and man["compute_capability"] == 90
    assert set(man["instructions"]) == {p.name for p in PROBES}
    refused = {k for k, v in man["ptxas_verdicts"].items() if v != "accepted"}
    assert refused == {"m16n8k16_f32_f16_f16_f16", "m16n8k16_f16_f16_f16_f32"}
    # the probes of LATER come from two later invocations (fp8; integer and b1), on an H200
    # too, each with its own provenance; the first run's top level lists only its own kernels
    later = {n: e["run"] for n, e in man["instructions"].items() if "run" in e}
    assert set(later) == {p.name for p in LATER}
    assert set(later.values()) == {"later_runs[0]", "later_runs[1]"}
    assert len(man["later_runs"]) == 2
    for i, run in enumerate(man["later_runs"]):
        assert run["gpu"] == "NVIDIA H200" and run["provenance"]["git_commit"] == "1816c5c"
        assert run["compute_capability"] == 90 and "instructions" not in run
        mine = {n for n, r in later.items() if r == f"later_runs[{i}]"}
        assert {f"probe_{n}" for n in mine} <= set(run["sass_opcodes"])  # all 42 compiled
    assert len(man["sass_opcodes"]) == len(PROBES) - len(LATER)


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.name)
def test_recorded_inputs_regenerate_from_the_seed(probe):
    """The recorded a, b, c and data kinds are exactly what packed.generate makes from the
    manifest's seed and tile count: the recordings can be reproduced, and the generator has
    not drifted since."""
    entry = MANIFEST["instructions"][probe.name]
    run = (
        MANIFEST["later_runs"][int(entry["run"].split("[")[1][:-1])] if "run" in entry else MANIFEST
    )
    seed = run["seed"]
    rec = packed.load(DATA / f"{probe.name}.npz")
    inp = packed.generate(probe, entry["tiles"], seed)
    assert tuple(inp.kinds) == rec.kinds
    for what, got, want in (("a", inp.a, rec.a), ("b", inp.b, rec.b), ("c", inp.c, rec.c)):
        assert got.shape == want.shape and np.array_equal(got, want), what
    assert np.array_equal(inp.kind, rec.kind)


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.name)
def test_recording_matches_the_sm90_model(probe):
    rec = packed.load(DATA / f"{probe.name}.npz")
    assert rec.ptx == probe.ptx
    ok = packed.matches(probe, rec, packed.emulate(probe, rec))
    # 51,200 outputs each (first run); 25,600 (fp8) or 12,800 (integer, b1) for LATER
    assert ok.size == MANIFEST["instructions"][probe.name]["outputs"]
    assert ok.size >= (
        50_000 if probe not in LATER else 25_600 if probe.instruction.acc_fmt != "int32" else 12_800
    )
    per = ok.reshape(ok.shape[0], -1)
    bad = {k: int((~per[rec.kind == i]).sum()) for i, k in enumerate(rec.kinds)}
    assert not any(bad.values()), bad
