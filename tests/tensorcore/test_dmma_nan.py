"""DMMA's NaN payload rule (precision.tensorcore.dmma_nan) on hand-built chains and on the H200
recordings (tests/data/sm90_mma, tests/data/sm90_wmma): every NaN output bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from precision.probe import packed
from precision.probe.generic import PROBES
from precision.tensorcore import dmma, dmma_nan
from precision.tensorcore.dmma_nan import nan_payloads

DATA = Path(__file__).parents[1] / "data"
QNAN_A = 0x7FF8000000000A0A  # quiet, positive
SNAN_B = 0xFFF000000000B0B0  # signalling, negative: quieted to 0xFFF800000000B0B0
QNAN_C = 0x7FF800000000C0C0
INF, NINF = 0x7FF0000000000000, 0xFFF0000000000000
ONE, ZERO = 0x3FF0000000000000, 0


def _run(a_row: list[int], b_col: list[int], c: int) -> int:
    """Bits of d for one output: a [1, K], b [K, 1], c [1, 1] given as binary64 bit patterns."""
    a = np.array([a_row], dtype=np.uint64).view(np.float64)
    b = np.array(b_col, dtype=np.uint64).reshape(-1, 1).view(np.float64)
    cc = np.array([[c]], dtype=np.uint64).view(np.float64)
    with np.errstate(all="ignore"):
        d = nan_payloads(a, b, cc, dmma.fma_chain(a, b, cc))
    return int(d.view(np.uint64)[0, 0])


@pytest.mark.parametrize(
    ("a_row", "b_col", "c", "want"),
    [
        ([QNAN_A, ONE], [SNAN_B, ONE], QNAN_C, SNAN_B | 1 << 51),  # b beats acc and a
        ([QNAN_A, ONE], [ONE, ONE], QNAN_C, QNAN_C),  # acc beats a
        ([QNAN_A, ONE], [ONE, ONE], ONE, QNAN_A),  # a alone, kept through later steps
        ([ONE, INF], [ONE, ZERO], ONE, 0xFFF8000000000000),  # Inf*0: the default NaN
        ([INF, ONE], [ONE, ONE], NINF, 0xFFF8000000000000),  # Inf - Inf
        ([INF, QNAN_A], [ZERO, ONE], ONE, 0xFFF8000000000000),  # generated acc beats later a
        ([INF, ONE], [ZERO, SNAN_B], ONE, SNAN_B | 1 << 51),  # ... but not a later b
        ([INF], [ZERO], QNAN_C, QNAN_C),  # Inf*0 + NaN: the NaN addend
        ([ONE, ONE], [ONE, ONE], ONE, 0x4008000000000000),  # no NaN: value untouched (3.0)
    ],
)
def test_rule_on_hand_built_chains(a_row, b_col, c, want):
    assert _run(a_row, b_col, c) == want


def test_non_nan_outputs_and_shapes_untouched():
    rng = np.random.default_rng(3)
    a, b, c = rng.normal(size=(2, 5, 8, 4)), rng.normal(size=(4, 8)), rng.normal(size=(8, 8))
    d = dmma.fma_chain(a, b, c)
    got = nan_payloads(a, b, c, d)
    assert got.shape == d.shape and (got.view(np.uint64) == d.view(np.uint64)).all()
    with pytest.raises(ValueError, match="do not chain"):
        nan_payloads(a, b.T, c, np.full((2, 5, 8, 8), np.nan))


@pytest.mark.parametrize("shape", ["m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"])
def test_every_recorded_mma_sync_nan_output(shape):
    probe = next(p for p in PROBES if p.name == f"{shape}_f64_f64_f64_f64")
    rec = packed.load(DATA / "sm90_mma" / f"{probe.name}.npz")
    d = packed.emulate(probe, rec)  # precision.mma(..., arch="sm90", fmt="fp64", shape=)
    nan = np.isnan(rec.d.view(np.float64))
    assert nan.sum() > 800
    assert (d[nan] == rec.d[nan]).all()


@pytest.mark.parametrize("chunk", [None, 7])  # 7: one output per rescanned chunk (K = 4)
def test_every_recorded_wmma_nan_output(chunk, monkeypatch):
    if chunk is not None:
        monkeypatch.setattr(dmma_nan, "_CHUNK_ELEMENTS", chunk)
    with np.load(DATA / "sm90_wmma" / "f64_f64_m8n8k4.npz") as z:
        a, b, c, want = (z[k].view(np.float64) for k in "abcd")
    with np.errstate(all="ignore"):
        got = nan_payloads(a, b, c, dmma.fma_chain(a, b, c))
    nan = np.isnan(want)
    assert nan.sum() > 800
    assert (got.view(np.uint64) == want.view(np.uint64)).all()


def test_overwrite_rewrites_d_in_place():
    """overwrite=True (as precision.mma calls it) rewrites the chain's own result instead of
    copying it (one output-sized array less), with the same bits as the recording."""
    with np.load(DATA / "sm90_wmma" / "f64_f64_m8n8k4.npz") as z:
        a, b, c, want = (z[k].view(np.float64) for k in "abcd")
    with np.errstate(all="ignore"):
        d = dmma.fma_chain(a, b, c)
        got = nan_payloads(a, b, c, d, overwrite=True)
    assert got is d
    assert (got.view(np.uint64) == want.view(np.uint64)).all()
    with pytest.raises(TypeError, match="float64 array"):
        nan_payloads(a, b, c, d.tolist(), overwrite=True)
    with pytest.raises(ValueError, match="C-contiguous"):
        nan_payloads(a, b, c, d[..., ::-1], overwrite=True)
