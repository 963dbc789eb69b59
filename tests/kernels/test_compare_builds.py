"""``python -m precision.kernels.compare_builds``: it builds every CUDA source of the package,
and a mistyped tree is one line (exit status 2) before any nvcc run, not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision.kernels import compare_builds

ROOT = Path(__file__).resolve().parents[2]


def test_every_cuda_source_of_the_package_is_built() -> None:
    # ozaki1.cu and the generated mma_probes.cu / wmma_probe.cu were not, so an edit of them
    # could not be checked as "changes no code"
    sources = {str(p.relative_to(ROOT)) for p in (ROOT / "precision").rglob("*.cu")}
    assert sources and sources == {b.source for b in compare_builds.BUILDS}


def test_a_tree_that_is_no_checkout_is_one_line_before_any_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    def no_build(*args, **kwargs):
        raise AssertionError("nvcc must not run")

    monkeypatch.setattr(compare_builds, "build", no_build)
    missing = tmp_path / "nope"
    assert compare_builds.main([str(missing), str(ROOT)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"error: BASE_ROOT {missing}: no precision/kernels there (expected the root of a "
        "checkout of this project)"
    ]


def test_a_failed_build_leaves_no_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # without --out the cubins go to a fresh temporary folder, named only on success: a
    # failed nvcc run (missing, or a compile error) left it behind unnamed on every call
    import tempfile

    def failing_build(*args, **kwargs):
        raise RuntimeError("nvcc not found")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(compare_builds, "build", failing_build)
    assert compare_builds.main([str(ROOT), str(ROOT)]) == 2
    assert capsys.readouterr().err.splitlines() == ["error: nvcc not found"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("under", [False, True], ids=["a-file", "under-a-file"])
def test_an_unusable_out_is_one_line_before_any_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, under: bool
) -> None:
    # --out afile/x was a NotADirectoryError traceback
    def no_build(*args, **kwargs):
        raise AssertionError("nvcc must not run")

    monkeypatch.setattr(compare_builds, "build", no_build)
    afile = tmp_path / "afile"
    afile.write_text("a file\n")
    out = afile / "x" if under else afile
    assert compare_builds.main([str(ROOT), str(ROOT), "--out", str(out)]) == 2
    stdout, err = capsys.readouterr()
    assert stdout == ""
    why = f"cannot write in {out} (Not a directory)" if under else "not a directory (expected a "
    assert len(err.splitlines()) == 1 and err.startswith(f"error: --out {out}: {why}"), err


def test_without_out_the_temporary_cubins_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # they were left in /tmp/compare_builds-XXXX (about 7 MB a run), though the help text of
    # --out ("keep the cubins in this directory") implied otherwise
    import tempfile

    def fake_build(root: Path, b: compare_builds.Build, out: Path) -> Path:
        out.write_bytes(b"same bytes")
        return out

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(compare_builds, "build", fake_build)
    assert compare_builds.main([str(ROOT), str(ROOT)]) == 0
    assert "identical" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    kept = tmp_path / "kept"
    assert compare_builds.main([str(ROOT), str(ROOT), "--out", str(kept)]) == 0
    assert len(list(kept.glob("*.cubin"))) == 2 * len(compare_builds.BUILDS)


def test_usage_names_the_invocation_and_the_roots(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        compare_builds.main(["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m precision.kernels.compare_builds ")
    assert "BASE_ROOT NEW_ROOT" in out and "deleted at the end" in " ".join(out.split())
