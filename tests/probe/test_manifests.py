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
