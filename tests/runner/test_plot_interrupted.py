"""`precision plot` on a results directory left by an interrupted run combines stored points."""

from __future__ import annotations

import shutil

import pandas as pd

from precision.runner.cli import main

CONFIG = """
name = "interrupted"
seed = 1
[sweep]
size = [16, 32]
distribution = ["uniform"]
method = ["plain"]
format = ["f16"]
backend = ["emulator"]
"""


#: `precision plot` options for tests that check the results table and stored points: the
#: figures are incidental there, so one figure (the error's, png) is drawn, not the TFLOP/s
#: one and a pdf too.
ONE_FIGURE = ["--metric", "err_fro", "--format", "png"]


def _sorted(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values(["point_id", "repeat"]).reset_index(drop=True)


def test_plot_combines_points_of_an_interrupted_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.toml").write_text(CONFIG)
    assert main(["run", "cfg.toml", "--quiet", "--no-plots"]) == 0
    out = tmp_path / "results" / "interrupted"
    combined = pd.read_parquet(out / "results.parquet")
    points = sorted((out / "points").glob("*.parquet"))
    assert len(points) == 2 and len(combined) == 2  # one row per size (one repeat)
    rows = pd.concat([pd.read_parquet(p) for p in points], ignore_index=True)
    (out / "results.parquet").unlink()  # as if the run had been killed before combining
    (out / "results.csv").unlink()
    shutil.rmtree(out / "figures", ignore_errors=True)
    assert main(["plot", str(out), *ONE_FIGURE]) == 0  # (only err_fro.png is read)
    rebuilt = pd.read_parquet(out / "results.parquet")
    # the same rows with the same values (and columns) as the table the run combined ...
    pd.testing.assert_frame_equal(_sorted(rebuilt), _sorted(combined), check_exact=True)
    # ... which are the stored point rows plus the table's name and distribution label
    assert set(rebuilt.columns) - set(rows.columns) == {"name", "dist_label"}
    pd.testing.assert_frame_equal(
        _sorted(rebuilt)[list(rows.columns)], _sorted(rows), check_exact=True
    )
    assert (rebuilt["name"] == "interrupted").all()
    assert sorted(rebuilt["m"]) == [16, 32] and (rebuilt["status"] == "ok").all()
    assert (out / "figures" / "err_fro.png").stat().st_size > 1000


def test_plot_rebuilds_an_unreadable_or_stale_table(tmp_path, monkeypatch):
    import os

    import pandas as pd

    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.toml").write_text(CONFIG)
    assert main(["run", "cfg.toml", "--quiet", "--no-plots"]) == 0
    out = tmp_path / "results" / "interrupted"
    good = pd.read_parquet(out / "results.parquet")
    (out / "results.parquet").write_bytes(b"not a parquet file")  # truncated / garbage
    assert main(["plot", str(out), *ONE_FIGURE]) == 0  # (the table is checked, not figures)
    assert pd.read_parquet(out / "results.parquet").equals(good)
    # a table older than its points (e.g. a point recomputed after it was written)
    old = (out / "results.parquet").stat().st_mtime - 60
    os.utime(out / "results.parquet", (old, old))
    assert main(["plot", str(out), *ONE_FIGURE]) == 0
    assert (out / "results.parquet").stat().st_mtime > old


def test_plot_says_how_many_points_of_the_config_are_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.toml").write_text(CONFIG.replace("[16, 32]", "[16, 32, 64]"))
    assert main(["run", "cfg.toml", "--quiet", "--no-plots"]) == 0
    out = tmp_path / "results" / "interrupted"
    assert main(["plot", str(out), *ONE_FIGURE]) == 0
    assert "note:" not in capsys.readouterr().err  # complete: nothing to say
    points = sorted((out / "points").glob("*.parquet"))
    assert len(points) == 3
    points[0].unlink()  # as if the run had been killed after two of the three points
    (out / "results.parquet").unlink()
    assert main(["plot", str(out), *ONE_FIGURE]) == 0
    err = capsys.readouterr().err
    assert f"note: 2 of 3 points of {out / 'config.toml'} are stored; 1 missing " in err
    assert "(run the config to compute them; the stored points are kept)" in err
    assert len(pd.read_parquet(out / "results.parquet")) == 2
    # The figures and tables of a partial run say so, not only the terminal.
    summary = (out / "figures" / "summary.md").read_text()
    assert "Note: incomplete: 2 of the config's 3 points are stored." in summary


def test_plot_of_a_directory_a_run_is_writing_names_that_run_only(tmp_path, monkeypatch, capsys):
    """The table of a running sweep is older than its newest points, and rebuilding it needs
    the directory's lock: plot refused with `precision run`'s advice (another name,
    --results-dir, --wait), options plot does not have."""
    from precision.runner.store import ResultsDir

    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.toml").write_text(CONFIG)
    assert main(["run", "cfg.toml", "--quiet", "--no-plots"]) == 0
    out = tmp_path / "results" / "interrupted"
    (out / "results.parquet").unlink()  # as a run leaves it between two points
    with ResultsDir(out.parent, out.name).lock():  # that run, still going
        assert main(["plot", str(out), "--format", "png"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith(f"error: {out} is being written by another run (host ")
    assert err.rstrip().endswith(
        "which draws the figures when it ends; run precision plot again after that"
    )
    assert "--results-dir" not in err and "--wait" not in err
    assert not (out / "figures").exists()
