"""``python -m precision.gemm.ozaki_bench --out DIR`` never overwrites an earlier run."""

from __future__ import annotations

import pytest

from precision.gemm import ozaki_bench


@pytest.mark.parametrize("name", ozaki_bench.OUTPUT_FILES)
def test_refuses_a_directory_that_holds_an_earlier_run(tmp_path, capsys, name):
    earlier = tmp_path / name
    earlier.write_text("an earlier run\n")
    assert ozaki_bench.main(["--out", str(tmp_path), "--skip", "identity", "errors", "speed"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and name in err and str(tmp_path) in err
    assert earlier.read_text() == "an earlier run\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_skipping_every_stage_is_refused_and_makes_nothing(tmp_path, capsys):
    # it ran nothing, exited 0 and left an empty --out directory
    out = tmp_path / "skipall"
    assert ozaki_bench.main(["--out", str(out), "--skip", "identity", "speed", "errors"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("error: --skip identity speed errors")
    assert not out.exists()


def _full_table(path):
    path.write_text(
        ",".join(ozaki_bench.COLUMNS) + "\n" + ",".join("1" * len(ozaki_bench.COLUMNS)) + "\n"
    )
    return path


@pytest.mark.parametrize("combine", [False, True], ids=["gpu-run", "combine"])
def test_out_naming_a_file_is_one_line(tmp_path, capsys, combine):
    # a FileExistsError traceback at args.out.mkdir
    afile = tmp_path / "afile"
    afile.write_text("a file\n")
    extra = ["--combine", str(_full_table(tmp_path / "t.csv"))] if combine else []
    assert ozaki_bench.main(["--out", str(afile), *extra]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: --out {afile}: not a directory (expected a new directory name)"
    ]
    assert afile.read_text() == "a file\n"


def test_out_under_a_file_is_one_line(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("a file\n")
    out = afile / "sub"
    table = _full_table(tmp_path / "t.csv")
    assert ozaki_bench.main(["--out", str(out), "--combine", str(table)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: --out {out}: cannot write in {out} (Not a directory)"
    ]


def test_combine_of_a_malformed_table_is_one_line(tmp_path, capsys):
    # pandas' ParserError message ends with a newline: the error took two lines
    bad = tmp_path / "x.toml"
    bad.write_text('a = 1\n[table]\nb = "x, y, z"\n')
    out = tmp_path / "out"
    assert ozaki_bench.main(["--out", str(out), "--combine", str(bad)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.endswith("saw 3)\n"), err
    assert err.startswith(f"error: --combine: cannot use {bad} (not a csv table: ParserError")
    assert not out.exists()
