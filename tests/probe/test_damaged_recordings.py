"""``precision verify`` and the compare tools on damaged or inconsistent recordings (CPU): one
``error:`` line naming the file (and the array or manifest entry), exit status 2, never a
traceback and never a table that silently leaves outputs out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from precision.probe import packed, wgmma, wmma
from precision.probe.capture import load_arrays, load_recording
from precision.probe.suite import verify_dir
from precision.runner.cli import main

DATA = Path(__file__).parents[1] / "data"
VICTIM = "wgmma_f16_f32.npz"  # the first recording sm90_wgmma replays


def _copy(tmp_path: Path, family: str = "sm90_wgmma") -> Path:
    copy = tmp_path / family
    shutil.copytree(DATA / family, copy)
    return copy


def _rewrite(path: Path, change) -> None:  # noqa: ANN001 (a callable on the dict of arrays)
    arrays = dict(np.load(path))
    change(arrays)
    np.savez(path, **arrays)


def _verify_error(path: Path, capsys) -> str:  # noqa: ANN001
    """``precision verify PATH``: exit 2 with one ``error:`` line and no table; that line."""
    assert main(["verify", str(path)]) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and out == ""
    return lines[0]


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _corrupt(p: Path) -> None:
    data = bytearray(p.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    p.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage",
    [_truncate, _corrupt, lambda p: p.write_bytes(b"")],
    ids=["truncated", "corrupt", "empty"],
)
@pytest.mark.parametrize("family", ["sm90_wgmma", "sm90_wgmma_extra"])
def test_an_unreadable_npz_is_one_error_naming_it(damage, family, tmp_path, capsys):
    copy = _copy(tmp_path, family)
    victim = copy / sorted(q.name for q in copy.glob("*.npz"))[0]
    damage(victim)
    line = _verify_error(copy, capsys)
    assert str(victim) in line and "unreadable recording" in line


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda z: z.pop("kind"), ["missing arrays ['kind']"]),
        (lambda z: z.pop("d"), ["missing arrays ['d']"]),
        (lambda z: z.__setitem__("d", z["d"].astype(np.int64)), ["'d'", "uint32", "int64"]),
        (lambda z: z.__setitem__("d", z["d"][:10]), ["different numbers of tiles", "d 10"]),
        (lambda z: z.__setitem__("d_mma", z["d_mma"].astype(np.int64)), ["'d_mma'", "int64"]),
        (lambda z: z.__setitem__("kinds", z["kinds"][:-1]), ["'kind'", "no index into 'kinds'"]),
    ],
    ids=["no-kind", "no-d", "d-int64", "d-short", "d_mma-int64", "kinds-short"],
)
def test_a_recording_with_a_bad_array_is_one_error_naming_file_and_array(
    change, words, tmp_path, capsys
):
    """Before, a missing array was a KeyError traceback, an int64 copy of the bits read 100 %
    and tiles whose kind was no index into ``kinds`` silently dropped out of every count."""
    copy = _copy(tmp_path)
    _rewrite(copy / VICTIM, change)
    line = _verify_error(copy, capsys)
    assert str(copy / VICTIM) in line
    for w in words:
        assert w in line, line


def test_a_kind_index_outside_kinds_is_an_error_in_every_loader(tmp_path):
    """The mma.sync, fragment-packed and WMMA/wgmma loaders all refuse a tile whose ``kind``
    indexes no data kind (the old per-kind counts left such tiles out without a word)."""
    sources = {
        "f16_f32_x4.npz": DATA / "sm90" / "f16_f32_x4.npz",
        "m16n8k8_f32_bf16_bf16_f32.npz": DATA / "sm90_mma" / "m16n8k8_f32_bf16_bf16_f32.npz",
        VICTIM: DATA / "sm90_wgmma" / VICTIM,
    }
    for name, src in sources.items():
        dst = tmp_path / name
        shutil.copy(src, dst)

        def bump(z: dict) -> None:
            kind = z["kind"].copy()
            kind[-1] = len(z["kinds"])
            z["kind"] = kind

        _rewrite(dst, bump)
    with pytest.raises(ValueError, match="no index into 'kinds'"):
        load_recording(tmp_path / "f16_f32_x4.npz")
    with pytest.raises(ValueError, match="no index into 'kinds'"):
        packed.load(tmp_path / "m16n8k8_f32_bf16_bf16_f32.npz")
    with pytest.raises(ValueError, match="no index into 'kinds'"):
        load_arrays(tmp_path / VICTIM)


def test_a_manifest_listing_an_absent_recording_is_an_error(tmp_path, capsys):
    """Before, the missing file's outputs silently dropped out and verify exited 0."""
    copy = _copy(tmp_path)
    (copy / VICTIM).unlink()
    line = _verify_error(copy, capsys)
    assert "lists are missing" in line and VICTIM in line and "manifest.json" in line


def test_an_npz_the_manifest_does_not_list_is_an_error(tmp_path, capsys):
    """Before, an extra .npz was skipped without a word (it was never replayed)."""
    copy = _copy(tmp_path)
    shutil.copy(copy / VICTIM, copy / "wgmma_f16_f32 (copy).npz")
    line = _verify_error(copy, capsys)
    assert "does not list" in line and "wgmma_f16_f32 (copy).npz" in line


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"], ids=["not-json", "a-list"])
def test_an_unreadable_manifest_is_named(text, tmp_path, capsys):
    copy = _copy(tmp_path)
    (copy / "manifest.json").write_text(text)
    line = _verify_error(copy, capsys)
    assert str(copy / "manifest.json") in line and "unreadable manifest" in line


def test_an_mma_sync_recording_of_another_gpu_is_refused(tmp_path, capsys):
    """The hand-written mma.sync probes run on sm_90 only and replay through sm90's model; a
    manifest naming another GPU used to be replayed through sm90 all the same."""
    copy = tmp_path / "sm90"
    copy.mkdir()
    man = json.loads((DATA / "sm90" / "manifest.json").read_text())
    man["compute_capability"] = "80"
    man["instructions"] = {"f16_f32_x4": man["instructions"]["f16_f32_x4"]}
    (copy / "manifest.json").write_text(json.dumps(man))
    shutil.copy(DATA / "sm90" / "f16_f32_x4.npz", copy)
    line = _verify_error(copy, capsys)
    assert "compute_capability 80" in line and "sm_90" in line


def test_a_wmma_recording_of_another_gpu_is_replayed_with_that_gpus_model(tmp_path):
    """A WMMA capture from an sm_80 GPU used to be compared with sm90's WMMA model; now its
    float probes, which sm80 does not model, are unmatched under ``no model (sm80)`` (as the
    fragment-packed probes do), and the integer ones still meet the exact model."""
    names = ["f16_f32_m16n16k16", "u8_s32_m16n16k16"]
    man = json.loads((DATA / "sm90_wmma" / "manifest.json").read_text())
    man["compute_capability"] = 80
    man["instructions"] = {n: man["instructions"][n] for n in names}
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    for n in names:
        shutil.copy(DATA / "sm90_wmma" / f"{n}.npz", tmp_path)
    rows = {(r.instruction, r.kind): (r.outputs, r.matches) for r in verify_dir(tmp_path)}
    assert rows[("f16_f32_m16n16k16", "no model (sm80)")] == (51_200, 0)
    assert not [k for k in rows if k[0] == "f16_f32_m16n16k16" and k[1] != "no model (sm80)"]
    u8 = [v for k, v in rows.items() if k[0] == "u8_s32_m16n16k16"]
    assert sum(n for n, _ in u8) == 51_200 and all(n == m for n, m in u8)


@pytest.mark.parametrize("tool", [wgmma, wmma], ids=["wgmma", "wmma"])
def test_compare_tools_name_a_truncated_recording(tool, tmp_path, capsys):
    src = DATA / ("sm90_wgmma" if tool is wgmma else "sm90_wmma")
    name = VICTIM if tool is wgmma else "f16_f32_m16n16k16.npz"
    shutil.copy(src / name, tmp_path / name)
    _truncate(tmp_path / name)
    assert tool.main(["compare", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(tmp_path / name) in err and "unreadable recording" in err


def test_wmma_compare_refuses_a_recording_of_another_instruction(tmp_path):
    """A file named after one WMMA probe holding another's data (other shape) is refused
    instead of compared with the wrong instruction's model."""
    shutil.copy(DATA / "sm90_wmma" / "f16_f32_m32n8k16.npz", tmp_path / "f16_f32_m16n16k16.npz")
    with pytest.raises(ValueError, match=r"f16_f32_m16n16k16\.npz: array 'a' should be"):
        wmma.compare(tmp_path)


def test_packed_verify_command_names_a_damaged_recording_in_one_line(tmp_path, capsys):
    """``python -m precision.probe.packed verify DIR`` gave a traceback where ``precision
    verify`` gives one error line."""

    from precision.probe import packed

    src = Path(__file__).parents[1] / "data" / "sm90_mma"
    name = "m8n8k4_f64_f64_f64_f64.npz"
    man = json.loads((src / "manifest.json").read_text())
    man["instructions"] = {name[:-4]: man["instructions"][name[:-4]]}  # lists just this file
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    (tmp_path / name).write_bytes((src / name).read_bytes()[:1000])  # truncated
    assert packed.main(["verify", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and name in err and "Traceback" not in err


@pytest.mark.parametrize("where", ["missing", "empty", "other_family"])
def test_packed_verify_refuses_a_directory_without_its_recordings(where, tmp_path, capsys):
    """``packed verify`` on a mistyped path, an empty folder or another family's recordings
    printed an empty table and exited 0: a CI step using it passed on nothing."""
    from precision.probe import packed

    target = {
        "missing": tmp_path / "nonexist",
        "empty": tmp_path,
        "other_family": Path(__file__).parents[1] / "data" / "sm90_wgmma",
    }[where]
    assert packed.main(["verify", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert str(target) in err and "Traceback" not in err


@pytest.mark.parametrize("written", [9.0, 90.0, "sm_90"])
@pytest.mark.parametrize(
    ("family", "name"), [("sm90", "f16_f32_x4"), ("sm90_wmma", "u8_s32_m16n16k16")]
)
def test_a_compute_capability_that_is_no_integer_is_refused_naming_the_manifest(
    tmp_path, capsys, written, family, name
):
    """Three readers of a manifest's compute capability disagreed: the WMMA and packed
    families took ``int(value)`` (9.0 became 9, and 90.0 became sm_90, a float taken for this
    GPU by chance), the mma.sync one compared text, and ``append`` refused non-integers. One
    reader now refuses them all, naming the manifest and the value."""
    copy = tmp_path / family
    copy.mkdir()
    man = json.loads((DATA / family / "manifest.json").read_text())
    man["compute_capability"] = written
    man["instructions"] = {name: man["instructions"][name]}
    (copy / "manifest.json").write_text(json.dumps(man))
    shutil.copy(DATA / family / f"{name}.npz", copy)
    line = _verify_error(copy, capsys)
    assert str(copy / "manifest.json") in line
    assert f"compute_capability {written!r} is no compute capability" in line
