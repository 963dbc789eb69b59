"""The seeded input generators reproduce the inputs of the recorded H200 probes bit for bit.

The recordings in tests/data/sm90 store the raw bits of a, b, c that the GPU consumed; their
manifest stores the seed and tile count. Regenerating them checks that the generators (and the
bit layouts they take from :mod:`precision.formats`) still make exactly those inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precision.probe.capture import load_recording
from precision.probe.catalog import PROBES
from precision.probe.inputs import generate, tile_counts

DATA = Path(__file__).resolve().parents[1] / "data" / "sm90"


@pytest.mark.parametrize("name", sorted(PROBES))
def test_generators_reproduce_recorded_inputs(name):
    manifest = json.loads((DATA / "manifest.json").read_text())
    instr = PROBES[name]
    rec = load_recording(DATA / f"{name}.npz")
    counts = tile_counts(instr, manifest["tiles_per_instruction"])
    a, b, c, kind, kinds = generate(instr, counts, manifest["seed"])
    assert tuple(kinds) == tuple(rec.kinds)
    for what, got, want in (
        ("a", a, rec.a),
        ("b", b, rec.b),
        ("c", c, rec.c),
        ("kind", kind, rec.kind),
    ):
        assert got.dtype == want.dtype and got.shape == want.shape, what
        bad = np.flatnonzero(got.ravel() != want.ravel())
        assert bad.size == 0, f"{name}.{what}: {bad.size} elements differ, first at {bad[:5]}"
