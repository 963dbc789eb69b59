"""``python -m precision.kernels.generated``: the committed generated sources equal their
generators' output, and a stale or missing one is named (no GPU, no nvcc)."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision.kernels import generated


def test_committed_generated_sources_match_their_generators() -> None:
    assert generated.stale() == []


def test_check_names_a_stale_file_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "ops.cuh"
    stale.write_text("line 1\nline 2 (edited by hand)\n")
    missing = tmp_path / "gone.cuh"
    files = {stale: ("gen.stale", lambda: "line 1\nline 2\n"), missing: ("gen.gone", lambda: "x\n")}
    monkeypatch.setattr(generated, "GENERATED", files)
    assert generated.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert f"{stale}: differs from the output of gen.stale (first at line 2" in err
    assert f"{missing}: missing" in err
    assert stale.read_text() == "line 1\nline 2 (edited by hand)\n"  # --check writes nothing


def test_without_check_it_rewrites_only_what_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    same, other = tmp_path / "same.cuh", tmp_path / "other.cuh"
    same.write_text("a\n")
    other.write_text("old\n")
    files = {same: ("g.same", lambda: "a\n"), other: ("g.other", lambda: "new\n")}
    monkeypatch.setattr(generated, "GENERATED", files)
    assert generated.main([]) == 0
    assert other.read_text() == "new\n" and same.read_text() == "a\n"
    assert generated.main(["--check"]) == 0
