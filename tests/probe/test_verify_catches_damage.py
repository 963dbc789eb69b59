"""Damaged or mismatching recordings never pass as 100 %: hand-damaged copies of the real
recordings in tests/data (a high bit, a NaN payload, a missing ptx, a stray file), with the
expected counts taken from the arrays' sizes and the bits flipped here. Found untested by a
mutation audit of the recording and verification tools (2026-11-27)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision.probe import manifests, packed, wmma
from precision.probe.suite import format_rows, verify_dir
from precision.runner.cli import main

DATA = Path(__file__).parents[1] / "data"


def _copy_one(family: str, name: str, tmp_path: Path) -> Path:
    """A directory holding ``family``'s manifest and one of its recordings; that file."""
    d = tmp_path / family
    d.mkdir()
    shutil.copy(DATA / family / "manifest.json", d)
    shutil.copy(DATA / family / name, d)
    return d / name


def _copy_listed(family: str, name: str, tmp_path: Path) -> Path:
    """:func:`_copy_one`, its manifest cut to list that file alone (the compare tools, as
    ``precision verify``, refuse a directory missing a recording its manifest lists)."""
    f = _copy_one(family, name, tmp_path)
    man = json.loads((f.parent / "manifest.json").read_text())
    stem = "wgmma_{}" if "wgmma" in family else "{}"
    man["instructions"] = {
        k: e
        for k, e in man["instructions"].items()
        if e.get("file", f"{stem.format(k)}.npz") == name
    }
    assert len(man["instructions"]) == 1
    (f.parent / "manifest.json").write_text(json.dumps(man))
    return f


def _flip(path: Path, index: int, mask: int) -> tuple[int, int]:
    """XOR ``mask`` into output ``index`` (flat) of ``d``; (old bits, new bits)."""
    arrays = dict(np.load(path))
    d = arrays["d"].copy()
    old = int(d.reshape(-1)[index])
    d.reshape(-1)[index] ^= d.dtype.type(mask)
    arrays["d"] = d
    np.savez(path, **arrays)
    return old, int(d.reshape(-1)[index])


def test_a_high_bit_of_an_fp32_output_flipped_is_one_mismatch_exit_1_and_not_100(tmp_path, capsys):
    """Bit 30 (the exponent's top bit) of one fp32 mma.sync output: exactly one output fails,
    the row and the total say less than 100 %, and ``precision verify`` exits 1."""
    f = _copy_one("sm90", "f16_f32_x4.npz", tmp_path)
    n = int(np.load(f)["d"].size)
    assert verify_dir(f) and sum(r.matches for r in verify_dir(f)) == n  # intact: all match
    _flip(f, 0, 1 << 30)
    rows = verify_dir(f)
    assert sum(r.outputs for r in rows) == n
    assert sum(r.matches for r in rows) == n - 1
    (bad,) = [r for r in rows if r.matches != r.outputs]
    assert bad.percent == pytest.approx(100.0 * (bad.outputs - 1) / bad.outputs)
    total = format_rows(rows).splitlines()[-1].split()
    assert total[-3:] == [str(n), str(n - 1), f"{100.0 * (n - 1) / n:.3f}"]
    assert main(["verify", str(f)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1].split()[-1] != "100.000"


def test_a_changed_nan_payload_of_an_f64_output_is_a_mismatch(tmp_path):
    """f64 outputs are compared bit for bit, NaN payloads included: a NaN whose payload is
    changed (still a NaN) is one unmatched output, not 'NaN == NaN'."""
    name = "m8n8k4_f64_f64_f64_f64.npz"
    f = _copy_one("sm90_mma", name, tmp_path)
    d = np.load(f)["d"].reshape(-1)
    first_nan = int(np.flatnonzero(np.isnan(d.view(np.float64)))[0])
    old, new = _flip(f, first_nan, 1)  # lowest payload bit
    assert np.isnan(np.array([old, new], np.uint64).view(np.float64)).all() and old != new
    table = packed.verify(f.parent)[name[:-4]]
    assert sum(n for n, _ in table.values()) == d.size
    assert sum(m for _, m in table.values()) == d.size - 1


def test_append_refuses_to_overwrite_a_file_the_manifest_does_not_name(tmp_path):
    """A destination file of the later run's name is never overwritten, even where the
    destination's manifest does not list it as an instruction."""
    into = tmp_path / "into"
    into.mkdir()
    np.savez(into / "a.npz", d=np.arange(4))
    stray = np.arange(7)
    np.savez(into / "x.npz", d=stray)
    (into / "manifest.json").write_text(json.dumps({"instructions": {"a": {}}}))
    later = tmp_path / "later"
    later.mkdir()
    np.savez(later / "x.npz", d=np.zeros(4))
    (later / "manifest.json").write_text(json.dumps({"instructions": {"x": {}}}))
    before = (into / "manifest.json").read_text()
    with pytest.raises(ValueError, match="already holds x.npz"):
        manifests.append_run(later, into)
    assert np.array_equal(np.load(into / "x.npz")["d"], stray)
    assert (into / "manifest.json").read_text() == before


def test_a_wmma_recording_without_its_ptx_is_refused(tmp_path):
    """A WMMA recording that does not say which instruction made it is no recording of the
    probe whose name it bears."""
    p = wmma.PROBES[0]
    f = tmp_path / f"{p.name}.npz"
    arrays = dict(np.load(DATA / "sm90_wmma" / f"{p.name}.npz"))
    assert str(arrays.pop("ptx")) == p.ptx
    np.savez(f, **arrays)
    with pytest.raises(ValueError, match="records None"):
        wmma.load(p, f)


def test_match_counts_refuses_a_tile_of_no_kind():
    """A tile whose kind indexes no data kind would count in 'all' but in no per-kind row (and
    the suite's rows leave 'all' out): an error, not a smaller table."""
    from precision.probe.capture import match_counts

    x = np.zeros((3, 2, 2), np.uint32)
    with pytest.raises(ValueError, match="do not all index"):
        match_counts(x, x.copy(), np.array([0, 1, 2], np.uint8), ("small_int", "normal"))
    ok = match_counts(x, x.copy(), np.array([0, 1, 1], np.uint8), ("small_int", "normal"))
    assert ok == {"all": (12, 12), "small_int": (4, 4), "normal": (8, 8)}


def test_published_matches_counts_a_flipped_high_bit_of_an_fp32_output(tmp_path):
    """published.matches (the table of python -m precision.probe.published) compares all 32
    bits: the exponent's top bit of one published fp32 output flipped is one mismatch."""
    from precision.probe import published as pb

    recipe = next(r for r in pb.RECIPES.values() if r.out == "fp32" and r.xfail is None)
    root = tmp_path / "published"
    shutil.copytree(pb.DATA_DIR, root)
    path = pb.path_of(recipe.gpu, recipe.fmt, root)
    t = int(pb.load(path).d["fp32"].size)
    assert pb.matches(recipe, root=root) == (t, t)
    arrays = dict(np.load(path))
    d = arrays["d_fp32"].copy()
    d[0] ^= np.uint32(1 << 30)
    arrays["d_fp32"] = d
    np.savez(path, **arrays)
    assert pb.matches(recipe, root=root) == (t - 1, t)


@pytest.mark.parametrize(
    ("family", "name", "tool"),
    [
        ("sm90_wgmma_extra", "wgmma_e4m3e5m2_f16.npz", "wgmma"),
        ("sm90_wmma", "f16_f32_m16n16k16.npz", "wmma"),
    ],
)
def test_the_compare_tools_exit_1_when_the_emulators_model_differs(
    tmp_path, capsys, family, name, tool
):
    """python -m precision.probe.wgmma / wmma compare print every model's match rate (some
    differ by design: wgmma's fp8 against mma.sync's); their exit status is the verdict of
    the model precision.mma uses: 0 on the intact file, 1 with one output's bit 14 flipped."""
    import importlib

    module = importlib.import_module(f"precision.probe.{tool}")
    f = _copy_listed(family, name, tmp_path)
    assert module.main(["compare", str(f.parent)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "verdict: every output matches precision.mma"
    _flip(f, 3, 1 << 14)
    assert module.main(["compare", str(f.parent)]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("verdict: 1 of ") and "exit status 1" in last


def test_packed_verify_refuses_a_manifest_whose_recordings_are_missing(tmp_path, capsys):
    """python -m precision.probe.packed verify on a directory holding one of the 42 files its
    manifest lists: an error naming the missing ones (exit 2), not '100 %' over one file."""
    f = _copy_one("sm90_mma", "m8n8k4_f64_f64_f64_f64.npz", tmp_path)
    assert packed.main(["verify", str(f.parent)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "41 recording(s)" in err[0] and "are missing" in err[0]
