"""Published hardware outputs of V100, A100, A2, Ada, L40S, H100, H200 and B200, bit for bit.

The data are the ``model_validation`` files of Khattak & Mikaitis' MATLAB-tensor-core (BSD-2;
see tests/data/published/README.md), converted by ``python -m precision.probe.published
convert``. Each file is 5,000 single dot products recorded on the GPU; every output must be
reproduced exactly, by the block core with the parameters in ``published.RECIPES`` and, where
``precision.mma`` models the instruction the harness ran, by ``precision.mma`` with that GPU's
architecture model. A file that cannot be reproduced yet would carry an ``xfail`` reason with
its measured match rate (strict, so a fix is noticed); none does.
"""

from __future__ import annotations

import functools
import json
import re

import numpy as np
import pytest

from precision.probe import published as pb
from precision.tensorcore import ARCHS, get_arch

ROOT = pb.DATA_DIR
#: Dot products per published file (docs/coverage.md: 48 files, 240,000 outputs).
T = 5000


@functools.cache
def _load(gpu: str, fmt: str) -> pb.Published:
    return pb.load(pb.path_of(gpu, fmt, ROOT))


def _params(recipes, via):
    out = []
    for r in recipes:
        marks = [pytest.mark.xfail(reason=r.xfail, strict=True)] if r.xfail else []
        out.append(pytest.param(r, id=f"{r.name}-{via}", marks=marks))
    return out


def _assert_bitwise(recipe: pb.Recipe, got: np.ndarray, want: np.ndarray, via: str) -> None:
    # every one of the file's outputs is compared: an empty or short array cannot pass
    assert want.shape == (T,) and got.shape == want.shape, (recipe.name, got.shape, want.shape)
    assert got.dtype == want.dtype, (recipe.name, got.dtype, want.dtype)
    bad = np.flatnonzero(got != want)
    if bad.size:
        i = int(bad[0])
        width = 8 if recipe.out == "fp32" else 4
        pytest.fail(
            f"{recipe.name} via {via}: {want.size - bad.size}/{want.size} outputs match; first "
            f"mismatch at dot product {i}: got 0x{int(got[i]):0{width}X}, hardware "
            f"0x{int(want[i]):0{width}X}"
        )


def test_inventory():
    """Every published output file is converted, has a recipe, and has its source recorded."""
    files = sorted(p for p in ROOT.glob("*/*.npz") if p.parent.name != "inputs")
    have = set()
    for path in files:
        pub = pb.load(path)
        meta = pub.meta
        assert meta["commit"] == pb.SOURCE_COMMIT, path
        assert meta["source"] == pb.SOURCE_REPO, path
        assert (meta["T"], meta["K"]) == (T, pub.a.shape[1]), path
        assert set(meta["files"]) == {"a", "b", "c"} | {f"d_{o}" for o in meta["outputs"]}
        assert all(len(f["git_blob"]) == 40 for f in meta["files"].values()), path
        for o in meta["outputs"]:
            assert pub.d[o].dtype == (np.uint32 if o == "fp32" else np.uint16), path
            assert pub.d[o].shape == (T,), path
            have.add(f"{meta['gpu']}-{meta['format']}-{o}")
    assert have == set(pb.RECIPES)
    assert len(have) == 48 and len(files) == 32
    # the licence and the citation sit beside the data (one folder holds every published file)
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("BSD 2-Clause License")
    assert "Copyright (c) 2025, Faizan A. Khattak and Mantas Mikaitis" in licence
    readme = (ROOT / "README.md").read_text()
    assert pb.SOURCE_COMMIT in readme and pb.SOURCE_REPO in readme
    assert "Khattak" in readme and "doi:10.1145/3830409" in readme and "[LICENSE]" in readme
    assert {p.parent for p in ROOT.rglob("*.npz")} <= {ROOT / d for d in ("inputs", *_GPU_DIRS)}
    total = sum(p.stat().st_size for p in ROOT.rglob("*") if p.is_file())
    assert total < 4_000_000  # bytes


_GPU_DIRS = tuple(d for d, _ in pb.GPUS.values())


def test_every_file_is_replayed_through_precision_mma():
    """docs/coverage.md: all 48 files also match through ``precision.mma``; none is xfail."""
    assert [r.name for r in pb.RECIPES.values() if r.mma] == list(pb.RECIPES)
    assert not [r.name for r in pb.RECIPES.values() if r.xfail]


def _file(recipe: pb.Recipe) -> str:
    return f"tests/data/published/{pb.GPUS[recipe.gpu][0]}/{recipe.fmt}.npz"


def test_evidence_names_exactly_the_published_files_replayed():
    """An instruction's ``evidence`` names a published file if and only if that file is replayed
    here through ``precision.mma`` with that very instruction (arch, op, formats)."""
    replayed: set[tuple[str, str, str]] = set()  # (arch, ptx, file)
    for r in pb.RECIPES.values():
        ins = get_arch(r.arch).instruction(r.fmt, r.out, op=r.op)
        assert _file(r) in ins.evidence, (r.name, ins.ptx, ins.evidence)
        replayed.add((r.arch, ins.ptx, _file(r)))
    claimed = {
        (arch, ins.ptx, f)
        for arch, model in ARCHS.items()
        for ins in model.all_instructions()
        for f in re.findall(r"tests/data/published/\w+/\w+\.npz", ins.evidence)
    }
    assert claimed == replayed


@pytest.mark.parametrize("recipe", _params(pb.RECIPES.values(), "block"))
def test_published_file_block_core(recipe: pb.Recipe):
    pub = _load(recipe.gpu, recipe.fmt)
    _assert_bitwise(recipe, pb.replay(pub, recipe, via="block"), pub.d[recipe.out], "block")


@pytest.mark.parametrize("recipe", _params([r for r in pb.RECIPES.values() if r.mma], "mma"))
def test_published_file_precision_mma(recipe: pb.Recipe):
    pub = _load(recipe.gpu, recipe.fmt)
    _assert_bitwise(recipe, pb.replay(pub, recipe, via="mma"), pub.d[recipe.out], "mma")


def _rate(recipe: pb.Recipe) -> float:
    pub = _load(recipe.gpu, recipe.fmt)
    return float(np.mean(pb.replay(pub, recipe) == pub.d[recipe.out]))


# What the data decide between (rates measured on these files; see docs/coverage.md).
@pytest.mark.parametrize("gpu", ["H100", "H200", "B200"])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_f16_output_is_the_f16_hmma_lowering_not_qgmma(gpu, fmt):
    """fp8 -> fp16 on sm_90/sm_100 ``mma.sync``: two interleaved f16 blocks then an RN add of c.

    A QGMMA-style single 32-product block (F = 13, fed the same c) matches only 62-68 %, two
    contiguous halves 69-77 %, one chain of 16-blocks starting from c 55-60 %, partial sums
    kept in fp32 and rounded to fp16 once with c 62-68 %.
    """
    r = pb.RECIPES[f"{gpu}-{fmt}-fp16"]
    alts = dict(pb.alternatives(r))
    assert _rate(alts["QGMMA: one 32-block, F = 13"]) < 0.70
    assert _rate(alts["contiguous halves"]) < 0.80
    assert _rate(alts["one chain of 16-blocks from c"]) < 0.65
    assert _rate(alts["partial sums in fp32, one RN to fp16 with c"]) < 0.70


@pytest.mark.parametrize("gpu", ["H100", "H200"])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_hopper_fp8_fp32_files_ignore_the_published_c(gpu, fmt):
    """The Hopper fp8 -> fp32 outputs are Σ a·b alone (wgmma with D = 0): adding the published
    c matches at most 2 of 5,000; every output has its 10 low mantissa bits zero (e8m13)."""
    r = pb.RECIPES[f"{gpu}-{fmt}-fp32"]
    assert _rate(dict(pb.alternatives(r))["c as published"]) < 0.001
    d = _load(gpu, fmt).d["fp32"]
    assert not np.any(d & np.uint32(0x3FF))


def test_ada_fp8_blocks_are_16_products():
    """Ada QMMA fp8: L = 16 (L = 8 or one 32-block match 75-86 %), F = 13 (F = 12/14: < 80 %)."""
    for fmt in ("e4m3", "e5m2"):
        alts = dict(pb.alternatives(pb.RECIPES[f"Ada-{fmt}-fp32"]))
        for label in ("L = 8", "L = 32", "F = 12", "F = 14", "rounding rz"):
            assert _rate(alts[label]) < 0.87, (fmt, label)


# ----------------------------------------------------------------------------- converter


def _write_tree(root, gpu="H200", fmt="fp16"):
    folder = root / "model_validation" / gpu / fmt
    folder.mkdir(parents=True)
    (folder / f"a_{gpu}_{fmt}.txt").write_text("3c000000 3f800000\n40000000 00000000\n")
    (folder / f"b_{gpu}_{fmt}.txt").write_text("3f800000 bf800000\n3e800000 3f800000\n")
    (folder / f"c_{gpu}_fp32.txt").write_text(f"{0x3F800000:032b}\n{0x3EAAAAAB:032b}\n")
    (folder / f"d_{gpu}_fp32.txt").write_text(f"{0x3F000000:032b}\n{0x3F555555:032b}\n")
    (folder / f"d_{gpu}_fp16.txt").write_text(f"{0x3F000000:032b}\n{0x3F554000:032b}\n")
    (root / "LICENCE").write_text("BSD 2-Clause License\n")
    return folder


def test_convert_round_trip(tmp_path):
    _write_tree(tmp_path / "src")
    written = pb.convert(tmp_path / "src", tmp_path / "out", commit="0" * 40)
    assert [p.relative_to(tmp_path / "out").as_posix() for p in written] == [
        "inputs/fp16_k2.npz",
        "h200/fp16.npz",
    ]
    pub = pb.load(tmp_path / "out" / "h200" / "fp16.npz")
    np.testing.assert_array_equal(pub.a, np.array([[0x2000, 0x3C00], [0x4000, 0]], np.uint16))
    np.testing.assert_array_equal(pub.b, np.array([[0x3C00, 0xBC00], [0x3400, 0x3C00]]))
    np.testing.assert_array_equal(pub.c, np.array([0x3F800000, 0x3EAAAAAB], np.uint32))
    np.testing.assert_array_equal(pub.d["fp32"], np.array([0x3F000000, 0x3F555555]))
    np.testing.assert_array_equal(pub.d["fp16"], np.array([0x3800, 0x3AAA], np.uint16))
    meta = pub.meta
    assert (meta["gpu"], meta["format"], meta["K"], meta["T"]) == ("H200", "fp16", 2, 2)
    assert meta["files"]["a"]["path"] == "model_validation/H200/fp16/a_H200_fp16.txt"
    blob = pb.git_blob_sha1(
        (tmp_path / "src/model_validation/H200/fp16/a_H200_fp16.txt").read_bytes()
    )
    assert meta["files"]["a"]["git_blob"] == blob
    assert json.loads(json.dumps(meta)) == meta
    assert (tmp_path / "out" / "LICENSE").read_text().startswith("BSD 2-Clause")


def test_convert_names_the_bad_line(tmp_path):
    folder = _write_tree(tmp_path / "src")
    (folder / "a_H200_fp16.txt").write_text("3c000000 3f800000\n40000000\n")
    with pytest.raises(ValueError, match=r"a_H200_fp16.txt:2: expected 2 words"):
        pb.convert(tmp_path / "src", tmp_path / "out")


def test_convert_refuses_inexact_inputs(tmp_path):
    folder = _write_tree(tmp_path / "src")
    (folder / "a_H200_fp16.txt").write_text("3c000001 3f800000\n40000000 00000000\n")
    with pytest.raises(ValueError, match=r"a_H200_fp16.txt: .*not values of fp16"):
        pb.convert(tmp_path / "src", tmp_path / "out")


def test_convert_refuses_a_folder_with_files_and_leaves_nothing_when_it_fails(tmp_path):
    """Converting into tests/data/published itself (its README gave that command) replaced
    shared input files, so the other GPUs' sets named inputs of another shape; a conversion
    that failed part way left what it had written. A folder holding files is now refused,
    and a failed conversion removes its own files."""
    _write_tree(tmp_path / "src")
    out = tmp_path / "out"
    (out / "inputs").mkdir(parents=True)
    (out / "inputs" / "fp16_k2.npz").write_bytes(b"another GPU's inputs")
    with pytest.raises(FileExistsError, match=r"out already holds files: convert into a new"):
        pb.convert(tmp_path / "src", out)
    assert (out / "inputs" / "fp16_k2.npz").read_bytes() == b"another GPU's inputs"
    bad = _write_tree(tmp_path / "src", gpu="B200")  # (converted after H200: GPUS order)
    (bad / "c_B200_fp32.txt").write_text("1\n")
    with pytest.raises(ValueError, match="c_B200_fp32.txt"):
        pb.convert(tmp_path / "src", tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()


def test_convert_needs_model_validation(tmp_path):
    with pytest.raises(FileNotFoundError, match="model_validation"):
        pb.convert(tmp_path, tmp_path / "out")


MISSING_INPUTS = [
    ["table", "{tmp}/nonexist"],
    ["sensitivity", "{tmp}/nonexist"],
    ["table", "{tmp}"],
    ["convert", "{tmp}/nonexist", "{tmp}/o"],
]


@pytest.mark.parametrize("argv", MISSING_INPUTS)
def test_the_command_names_a_missing_input_in_one_line(argv, tmp_path, capsys):
    """A missing or empty directory ended in a FileNotFoundError traceback."""
    assert pb.main([a.format(tmp=tmp_path) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert str(tmp_path) in err
