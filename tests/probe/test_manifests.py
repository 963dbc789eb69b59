"""Later recording runs join a directory of recordings without losing either run's provenance
(precision.probe.manifests), and the recorders refuse to overwrite a run or to record a
selection they cannot: before any GPU is looked for."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precision.probe import manifests, packed
from precision.probe import wgmma as wp


def _run(directory: Path, names: list[str], commit: str, **entry) -> Path:
    """A recorder's output: one small .npz per name and a manifest naming them."""
    directory.mkdir(parents=True)
    for n in names:
        np.savez_compressed(directory / entry.get("file", f"{n}.npz").format(n), d=np.arange(4))
    man = {
        "gpu": "NVIDIA H200",
        "created_utc": commit + "-time",
        "provenance": {"git_commit": commit},
        "ptxas_verdicts": {n: "accepted" for n in names},
        "instructions": {n: {"outputs": 4} for n in names},
    }
    (directory / "manifest.json").write_text(json.dumps(man))
    return directory


def test_append_keeps_the_first_run_at_the_top_and_each_later_run_apart(tmp_path):
    first = _run(tmp_path / "data", ["a", "b"], "first")
    before = json.loads((first / "manifest.json").read_text())
    manifests.append_run(_run(tmp_path / "r1", ["c"], "second"), first)
    merged = manifests.append_run(_run(tmp_path / "r2", ["d", "e"], "third"), first)
    assert merged == json.loads((first / "manifest.json").read_text())
    assert {k: v for k, v in merged.items() if k not in ("instructions", "later_runs")} == {
        k: v for k, v in before.items() if k != "instructions"
    }  # the first run's top level, verdicts included, untouched
    assert [r["provenance"]["git_commit"] for r in merged["later_runs"]] == ["second", "third"]
    assert merged["later_runs"][1]["ptxas_verdicts"] == {"d": "accepted", "e": "accepted"}
    runs = {n: e.get("run") for n, e in merged["instructions"].items()}
    assert runs == {"a": None, "b": None, "c": "later_runs[0]", "d": "later_runs[1]",
                    "e": "later_runs[1]"}  # fmt: skip
    assert sorted(p.name for p in first.glob("*.npz")) == [f"{n}.npz" for n in "abcde"]


def test_append_overwrites_nothing_and_refuses_mismatched_runs(tmp_path):
    first = _run(tmp_path / "data", ["a"], "first")
    text = (first / "manifest.json").read_text()
    cases = {
        "same instruction": _run(tmp_path / "r1", ["a"], "x"),
        "files not named": _run(tmp_path / "r2", ["b"], "x"),
        "named files missing": _run(tmp_path / "r3", ["c"], "x"),
    }
    np.savez_compressed(cases["files not named"] / "stray.npz", d=np.zeros(1))
    (cases["named files missing"] / "c.npz").unlink()
    messages = {}
    for what, src in cases.items():
        with pytest.raises(ValueError) as info:
            manifests.append_run(src, first)
        messages[what] = str(info.value)
    assert "already holds a" in messages["same instruction"]
    assert "not named: stray.npz" in messages["files not named"]
    assert "missing: c.npz" in messages["named files missing"]
    assert (first / "manifest.json").read_text() == text  # nothing written
    assert sorted(p.name for p in first.glob("*.npz")) == ["a.npz"]
    with pytest.raises(ValueError, match="no such file"):
        manifests.append_run(tmp_path / "r1", tmp_path / "nowhere")


def test_append_cli_says_what_it_did_or_one_line_why_not(tmp_path, capsys):
    first = _run(tmp_path / "data", ["a"], "first")
    assert manifests.main(["append", str(_run(tmp_path / "r", ["b"], "x")), str(first)]) == 0
    assert "2 instructions, 1 later run(s)" in capsys.readouterr().out
    assert manifests.main(["append", str(tmp_path / "r"), str(first)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "already holds b" in err[0]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--only", "bogus_name"], "unknown bogus_name"),
        (["--only", "m8n8k16_s32_s8_s8_s32", "bogus_name"], "unknown bogus_name"),
        ([], "exists: record into a new directory"),
    ],
)
def test_packed_record_refuses_before_looking_for_a_gpu(tmp_path, capsys, argv, says):
    out = tmp_path / "out"
    if not argv:
        _run(out, ["a"], "first")
    assert packed.main(["record", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--only", "e4m3e5m2_f16"], "give --extra too"),
        (["--extra", "--only", "e4m3e5m2_f16", "nope"], "unknown nope"),
    ],
)
def test_wgmma_record_refuses_before_looking_for_a_gpu(tmp_path, capsys, argv, says):
    assert wp.main(["record", str(tmp_path / "out"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_an_empty_selection_is_refused_alike_by_both_recorders(tmp_path):
    for call in (
        lambda: packed.record(tmp_path / "p", only=[]),
        lambda: wp.record_extra(tmp_path / "w", names=[]),
    ):
        with pytest.raises(ValueError, match="no name given"):
            call()


# -- a later run of another GPU or another probe family is refused ------------------------------

DATA = Path(__file__).parents[1] / "data"


def _real_run(directory: Path, family: str, name: str, **top) -> Path:
    """A recorder's output made of one real recording of tests/data/``family``: that file and
    the family's manifest listing it alone (top-level fields replaced by ``top``)."""
    import shutil

    from test_verify_refusals import listing_alone

    directory.mkdir(parents=True)
    man = listing_alone(family, name)
    man.pop("later_runs", None)
    man.update(top)
    (directory / "manifest.json").write_text(json.dumps(man))
    shutil.copy(DATA / family / name, directory / name)
    return directory


MMA_FILE = "m16n8k16_s32_u8_u8_s32.npz"  # the smallest recordings of two packed probes
MMA_LATER = "m16n8k16_s32_u8_s8_s32.npz"


@pytest.mark.parametrize(
    ("later_cc", "into_cc"),
    [(80, 90), (89, None), (None, 80), ("86", 80)],
    ids=["80-into-90", "89-into-absent", "absent-into-80", "86-into-80"],
)
def test_append_refuses_a_run_of_another_compute_capability(tmp_path, capsys, later_cc, into_cc):
    """A run of another GPU used to join: verify then replayed its files through the model of
    the directory's GPU (the top-level compute_capability; sm_90 where absent) and said 100 %.
    86 and 80 share sm80's model, but are still two GPUs: refused too."""
    into = _real_run(tmp_path / "into", "sm90_mma", MMA_FILE)
    later = _real_run(tmp_path / "later", "sm90_mma", MMA_LATER)
    for d, cc in ((into, into_cc), (later, later_cc)):
        man = json.loads((d / "manifest.json").read_text())
        man.pop("compute_capability", None)
        man.update({} if cc is None else {"compute_capability": cc})
        (d / "manifest.json").write_text(json.dumps(man))
    before = (into / "manifest.json").read_text()
    assert manifests.main(["append", str(later), str(into)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert str(later / "manifest.json") in err[0] and str(into / "manifest.json") in err[0]
    assert f"compute_capability {int(later_cc or 90)}, but" in err[0]
    assert f"has {int(into_cc or 90)}" in err[0]
    assert (into / "manifest.json").read_text() == before  # nothing written
    assert sorted(p.name for p in into.glob("*.npz")) == [MMA_FILE]


def test_append_takes_a_run_of_the_same_compute_capability_however_written(tmp_path):
    """The mma_sync recorder's "90" (a string) and 90 are one compute capability."""
    into = _real_run(tmp_path / "into", "sm90_mma", MMA_FILE, compute_capability=90)
    later = _real_run(tmp_path / "later", "sm90_mma", MMA_LATER, compute_capability="90")
    merged = manifests.append_run(later, into)
    assert merged["instructions"][MMA_LATER[:-4]]["run"] == "later_runs[0]"


EXTRA_RUN = ("sm90_wgmma_extra", "wgmma_e5m2_f16.npz")


@pytest.mark.parametrize(
    ("later", "into", "says"),
    [
        (EXTRA_RUN, ("sm90_mma", MMA_FILE), "wgmma_extra"),
        (EXTRA_RUN, ("sm90_wgmma", "wgmma_tf32_f32.npz"), "wgmma_extra"),
        (("sm90_mma", MMA_FILE), ("sm90_wmma", "u8_s32_m16n16k16.npz"), "mma"),
    ],
    ids=["extra-into-mma", "extra-into-wgmma", "mma-into-wmma"],
)
def test_append_refuses_a_run_of_another_probe_family(tmp_path, capsys, later, into, says):
    """sm90_wgmma_extra appended to an sm90_mma directory used to join; verify then skipped
    its files (the packed probes' reader knows none of them) and still said 100 %."""
    src = _real_run(tmp_path / "later", *later)
    dst = _real_run(tmp_path / "into", *into)
    before = (dst / "manifest.json").read_text()
    assert manifests.main(["append", str(src), str(dst)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert f"a run of the {says} family, but {dst / 'manifest.json'} holds the" in err[0]
    assert (dst / "manifest.json").read_text() == before
    assert sorted(p.name for p in dst.glob("*.npz")) == [into[1]]


def test_packed_verify_refuses_a_listed_file_it_cannot_replay(tmp_path, capsys):
    """The directory an old append left (an extra's file listed in a packed probes'
    manifest): packed.verify skipped the file it does not know, and precision verify said
    100 % of the rest; both refuse it now, naming the manifest and the file."""
    from precision.probe.suite import verify_dir
    from precision.runner.cli import main as cli

    d = _real_run(tmp_path / "mma", "sm90_mma", MMA_FILE)
    extra = _real_run(tmp_path / "extra", "sm90_wgmma_extra", "wgmma_e5m2_f16.npz")
    man = json.loads((d / "manifest.json").read_text())
    entry = json.loads((extra / "manifest.json").read_text())["instructions"]["e5m2_f16"]
    man["instructions"]["e5m2_f16"] = {**entry, "run": "later_runs[0]"}
    (d / "manifest.json").write_text(json.dumps(man))
    (d / "wgmma_e5m2_f16.npz").write_bytes((extra / "wgmma_e5m2_f16.npz").read_bytes())
    for call in (lambda: packed.verify(d), lambda: verify_dir(d)):
        with pytest.raises(ValueError, match=r"lists 1 file\(s\) that the mma family's replay"):
            call()
    assert cli(["verify", str(d)]) == 2
    assert packed.main(["verify", str(d)]) == 2
    for err in capsys.readouterr().err.strip().splitlines():
        assert str(d / "manifest.json") in err and "wgmma_e5m2_f16.npz" in err, err
    # one file of the directory that the reader knows is still verified alone
    assert verify_dir(d / MMA_FILE)
