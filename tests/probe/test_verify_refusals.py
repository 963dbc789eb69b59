"""``precision verify`` and the compare tools refuse what they cannot do in full (CPU): a
``--json`` that would replace a file, a sub-directory of recordings they cannot count, a
directory missing a listed recording; a damaged file is named as the user gave it; a fresh
capture that disagrees is kept, and its JSON records the seed. Found by an audit, each
reproduced on the code before."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import precision.gpu
import precision.probe.suite
from precision.probe import wgmma, wmma
from precision.probe.suite import verify_dir
from precision.runner.cli import main

DATA = Path(__file__).parents[1] / "data"
ONE = "wgmma_tf32_f32.npz"  # the smallest recording of sm90_wgmma


def _one_error_line(capsys) -> str:  # noqa: ANN001
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def listing_alone(family: str, name: str) -> dict:
    """tests/data/``family``'s manifest, its instructions cut to those recorded in ``name``."""
    man = json.loads((DATA / family / "manifest.json").read_text())
    stem = "wgmma_{}" if "wgmma" in family else "{}"
    man["instructions"] = {
        k: e
        for k, e in man["instructions"].items()
        if e.get("file", f"{stem.format(k)}.npz") == name
    }
    return man


def _family_dir(
    tmp_path: Path, family: str = "sm90_wgmma", name: str = ONE, sub: str | None = None
) -> Path:
    """tmp_path/``sub`` (default: ``family``) holding tests/data/``family``'s manifest, cut to
    list ``name`` alone, and that recording."""
    d = tmp_path / (sub or family)
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps(listing_alone(family, name)))
    shutil.copy(DATA / family / name, d)
    return d


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


# -- 1. --json never replaces a file -----------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("input file", "is one of the files being verified"),
        ("file under the input", "is one of the files being verified"),
        ("tracked", "a file git tracks"),
        ("existing", "exists (verify replaces no file): choose a new file name"),
    ],
)
def test_verify_json_refuses_to_replace_a_file(tmp_path, capsys, target, says):
    """`precision verify tests/data/sm90/s8_s32.npz --json tests/data/sm90/s8_s32.npz` wrote
    its table over the tracked recording it had just verified; any existing file was
    replaced. Every such destination is refused before the replay, and left as it was."""
    d = _family_dir(tmp_path)
    verified = d / ONE if target == "input file" else d
    dest = {
        "input file": d / ONE,
        "file under the input": d / "manifest.json",
        "tracked": tmp_path / "repo" / "table.json",
        "existing": tmp_path / "table.json",
    }[target]
    if target == "tracked":  # a git work tree of our own: a file staged is a file git tracks
        if shutil.which("git") is None:
            pytest.skip("needs git")
        dest.parent.mkdir()
        dest.write_text("{}\n")
        for cmd in (["init", "-q"], ["add", "table.json"]):
            subprocess.run(["git", *cmd], cwd=dest.parent, check=True, capture_output=True)
    elif target == "existing":
        dest.write_text("notes\n")
    before = _digest(dest)
    assert main(["verify", str(verified), "--json", str(dest)]) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"error: --json {dest}: ") and says in line, line
    assert _digest(dest) == before


def test_verify_json_writes_a_new_file(tmp_path, capsys):
    dest = tmp_path / "out" / "table.json"
    assert main(["verify", str(_family_dir(tmp_path) / ONE), "--json", str(dest)]) == 0
    table = json.loads(dest.read_text())
    assert table["path"].endswith(ONE) and "seed" not in table and table["rows"]
    assert sorted(p.name for p in dest.parent.iterdir()) == ["table.json"]


def test_write_new_never_replaces_a_file_that_appeared_meanwhile(tmp_path):
    from precision.runner.commands.verify import write_new

    dest = tmp_path / "t.json"
    dest.write_text("theirs")
    with pytest.raises(FileExistsError):
        write_new(dest, "ours")
    assert dest.read_text() == "theirs" and [p.name for p in tmp_path.iterdir()] == ["t.json"]


# -- 4. a sub-directory of recordings without a manifest ---------------------------------------


@pytest.mark.parametrize("manifest", [None, {"instructions": {}}], ids=["none", "no-family"])
def test_verify_refuses_a_subdirectory_of_recordings_it_cannot_count(tmp_path, capsys, manifest):
    """A capture directory whose family sub-directory had .npz files but no manifest.json:
    verify left them out (fewer outputs, exit 0); docs/hardware.md says it refuses a
    directory it cannot count in full."""
    root = tmp_path / "capture"
    _family_dir(root, sub="wgmma")
    stray = root / "mma"
    stray.mkdir()
    shutil.copy(DATA / "sm90_mma" / "m16n8k16_s32_u8_u8_s32.npz", stray)
    if manifest is not None:
        (stray / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="cannot be counted") as info:
        verify_dir(root)
    assert str(info.value).startswith(f"{stray}: holds 1 .npz file(s)")
    assert main(["verify", str(root)]) == 2
    line = _one_error_line(capsys)
    assert f"{stray}: " in line
    assert ("no manifest.json" if manifest is None else "a manifest.json of no probe") in line


# -- 5. the compare tools refuse a directory missing a listed recording ------------------------


@pytest.mark.parametrize(
    ("tool", "family", "gone"),
    [
        (wmma, "sm90_wmma", "u8_s32_m16n16k16.npz"),
        (wgmma, "sm90_wgmma", ONE),
        (wgmma, "sm90_wgmma_extra", "wgmma_s8_s32.npz"),
    ],
    ids=["wmma", "wgmma", "wgmma_extra"],
)
def test_compare_tools_refuse_a_missing_listed_recording(tmp_path, capsys, tool, family, gone):
    """`python -m precision.probe.wmma compare DIR` (and wgmma's) printed 'every output
    matches' and exited 0 with a recording that DIR's manifest lists deleted; precision
    verify refuses the same directory, and so do they now."""
    d = tmp_path / family
    d.mkdir()
    shutil.copy(DATA / family / "manifest.json", d)
    n_listed = len(json.loads((d / "manifest.json").read_text())["instructions"])
    keep = sorted(p.name for p in (DATA / family).glob("*.npz") if p.name != gone)[:1]
    for name in keep:
        shutil.copy(DATA / family / name, d)
    assert tool.main(["compare", str(d)]) == 2
    line = _one_error_line(capsys)
    assert f"{n_listed - 1} recording(s) that {d / 'manifest.json'} lists are missing" in line
    assert gone in line
    assert main(["verify", str(d)]) == 2
    assert "lists are missing" in _one_error_line(capsys)


def test_compare_tool_refuses_another_familys_directory(tmp_path, capsys):
    assert wmma.main(["compare", str(DATA / "sm90_wgmma")]) == 2
    line = _one_error_line(capsys)
    assert "describes wgmma recordings, not wmma ones" in line


# -- 6. a damaged file is named as given -------------------------------------------------------


@pytest.mark.parametrize(
    ("family", "name"),
    [
        ("sm90_wmma", "u8_s32_m16n16k16.npz"),
        ("sm90_wgmma", ONE),
        ("sm90_wgmma_extra", "wgmma_e5m2_f16.npz"),
        ("sm90_mma", "m16n8k16_s32_u8_u8_s32.npz"),
    ],
)
def test_verify_of_one_damaged_file_names_that_file(tmp_path, capsys, family, name):
    """`precision verify DIR/f16_f32_m16n16k16.npz` on a corrupt file named a symbolic link
    in a deleted temporary directory (/tmp/precision-verify-XXXX/...), not the file."""
    f = _family_dir(tmp_path, family, name) / name
    data = bytearray(f.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    f.write_bytes(bytes(data))
    assert main(["verify", str(f)]) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"error: {f}: unreadable recording"), line
    assert "precision-verify" not in line


# -- 7. a fresh capture that disagrees is kept; its JSON records the seed ----------------------


@pytest.fixture
def fake_capture(tmp_path, monkeypatch):
    """``precision verify`` without PATH on a machine that seems to have a GPU: the capture
    copies one wgmma recording (a bit of one output flipped when ``flip[0]``), temporary
    directories go under tmp_path/tmp; returns (that folder, flip, the seeds captured)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    flip, seeds = [False], []

    def capture_all(out, *, seed, log=print):  # noqa: ANN001, ANN202
        seeds.append(seed)
        d = _family_dir(Path(out), sub="wgmma") / ONE
        if flip[0]:
            arrays = dict(np.load(d))
            arrays["d"] = arrays["d"].copy()
            arrays["d"].reshape(-1)[0] ^= np.uint32(1 << 14)
            np.savez(d, **arrays)
        return {"compute_capability": 90, "families": {"wgmma": {}}}

    monkeypatch.setattr(precision.gpu, "require_gpu", lambda what: None)
    monkeypatch.setattr(precision.probe.suite, "capture_all", capture_all)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp, flip, seeds


def test_a_fresh_capture_that_disagrees_is_kept_and_its_json_has_the_seed(
    fake_capture, tmp_path, capsys
):
    """It was deleted even when outputs differed, and the JSON recorded its deleted path."""
    tmp, flip, seeds = fake_capture
    flip[0] = True
    dest = tmp_path / "verify.json"
    assert main(["verify", "--seed", "7", "--json", str(dest)]) == 1
    (kept,) = tmp.iterdir()
    assert (kept / "wgmma" / ONE).is_file() and seeds == [7]
    assert f"the capture is kept in {kept} (seed 7)" in capsys.readouterr().out
    table = json.loads(dest.read_text())
    assert table["seed"] == 7 and table["path"] == str(kept)
    assert table["compute_capability"] == 90
    assert sum(r["outputs"] - r["matches"] for r in table["rows"]) == 1
    assert main(["verify", str(kept)]) == 1  # what was kept replays alike


def test_a_fresh_capture_that_matches_is_removed_and_its_json_has_the_seed(
    fake_capture, tmp_path, capsys
):
    tmp, _, seeds = fake_capture
    dest = tmp_path / "verify.json"
    assert main(["verify", "--json", str(dest)]) == 0
    assert list(tmp.iterdir()) == []
    table = json.loads(dest.read_text())
    assert table["seed"] == seeds[0] and table["path"] is None
    assert f"with seed {seeds[0]} into" in capsys.readouterr().out
    assert all(r["matches"] == r["outputs"] > 0 for r in table["rows"])
