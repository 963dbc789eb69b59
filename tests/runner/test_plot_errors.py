"""`precision plot` on directories it cannot write and options the table cannot show: one line
naming the problem (exit 2), no traceback, and no earlier figure or table lost or truncated."""

from __future__ import annotations

import builtins
import errno
import io
import pathlib
import shutil

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt
import numpy as np
import pytest
from test_plotting import SWEEP, rows

from precision.runner.cli import main


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _results_dir(tmp_path, table=None, plot_table: str = ""):
    root = tmp_path / "res"
    root.mkdir()
    if table is None:
        table = rows(series=(("plain", "fp16", "emulator"), ("plain", "fp32", "numpy")))
    table.to_parquet(root / "results.parquet")
    (root / "config.toml").write_text(SWEEP + plot_table)
    return root


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


# ----------------------------------------------------------------------------- read-only


def test_read_only_results_dir_is_one_line_naming_it_and_suggesting_out(
    tmp_path, monkeypatch, capsys
):
    root = _results_dir(tmp_path)
    real_mkdir = pathlib.Path.mkdir

    def read_only_mkdir(self, *args, **kwargs):  # as on a read-only mount (chmod: not as root)
        if self.is_relative_to(root):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", read_only_mkdir)
    assert main(["plot", str(root)]) == 2
    assert _error_line(capsys) == (
        f"error: cannot write to {root / 'figures'}: it is not writable (read-only file "
        "system or permissions); use --out DIR to write the figures elsewhere"
    )
    assert not (root / "figures").exists()
    out = tmp_path / "elsewhere"
    # (one figure, the one read: the TFLOP/s figure and a pdf would add nothing here)
    one_figure = ["--metric", "err_fro", "--format", "png"]
    assert main(["plot", str(root), "--out", str(out), *one_figure]) == 0
    assert (out / "err_fro.png").stat().st_size > 1000


# ----------------------------------------------------------------------------- disk full


@pytest.fixture(scope="module")
def plotted(tmp_path_factory):
    """A results directory plotted once (err_fro, png and pdf); shared: each test copies it."""
    root = _results_dir(tmp_path_factory.mktemp("plotted"))
    assert main(["plot", str(root), "--metric", "err_fro"]) == 0
    plt.close("all")
    return root


@pytest.mark.parametrize("victim", ["err_fro.png", "err_fro.pdf", "summary.csv", "summary.tex"])
def test_disk_full_keeps_the_earlier_file_and_reports_one_line(
    tmp_path, monkeypatch, capsys, victim, plotted
):
    root = tmp_path / "res"
    shutil.copytree(plotted, root)
    figures = root / "figures"
    before = {p.name: p.read_bytes() for p in figures.iterdir()}
    assert victim in before
    capsys.readouterr()
    real_open = builtins.open

    def full_open(file, mode="r", *args, **kwargs):
        """Writing the victim (or a temporary file for it) fills the disk halfway."""
        handle = real_open(file, mode, *args, **kwargs)
        if victim not in str(file) or not any(c in mode for c in "wax"):
            return handle

        class Full:
            def __getattr__(self, name):
                return getattr(handle, name)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                handle.close()

            def write(self, data):
                handle.write(data[: len(data) // 2])
                raise OSError(errno.ENOSPC, "No space left on device")

        return Full()

    monkeypatch.setattr(builtins, "open", full_open)
    monkeypatch.setattr(io, "open", full_open)
    # (the pdf, slow to write, is asked for only where it is the victim)
    formats = [] if victim.endswith(".pdf") else ["--format", "png"]
    code = main(["plot", str(root), "--metric", "err_fro", "--title", "changed", *formats])
    monkeypatch.undo()
    assert code == 2
    assert _error_line(capsys).startswith(
        f"error: cannot write {figures / victim}: the disk is full; "
    )
    assert figures.joinpath(victim).read_bytes() == before[victim]  # intact, not truncated
    assert {p.name for p in figures.iterdir()} == set(before)  # no temporary file left


# ----------------------------------------------------------------------------- --x, --hue


def _no_ozaki_rows():
    table = rows(series=(("plain", "fp16", "emulator"), ("plain", "fp32", "numpy")))
    return table.assign(terms=np.nan, target=None)  # as stored by a run without Ozaki points


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--x", "terms"],
            "error: --x terms: the table has no values in column 'terms' (only Ozaki methods "
            "have it); choose one of: auto, size, m, n, k",
        ),
        (
            ["--hue", "target"],
            "error: --hue target: the table has no values in column 'target' (only Ozaki "
            "methods have it); choose one of: method, format, backend, arch, distribution, m, "
            "n, k, shape, none",
        ),
        (
            ["--row", "terms"],
            "error: --row terms: the table has no values in column 'terms' (only Ozaki "
            "methods have it); choose one of: method, format, backend, arch, distribution, m, "
            "n, k, shape, none",
        ),
    ],
)
def test_an_option_the_table_has_no_values_for_is_named(tmp_path, capsys, argv, message):
    root = _results_dir(tmp_path, _no_ozaki_rows())
    assert main(["plot", str(root), *argv]) == 2
    assert _error_line(capsys) == message
    assert not (root / "figures").exists()


def test_x_terms_without_a_terms_column_and_from_the_config_is_named(tmp_path, capsys):
    root = _results_dir(tmp_path, plot_table='[plot]\nx = "terms"\n')
    assert main(["plot", str(root)]) == 2
    assert _error_line(capsys) == (
        f"error: [plot] x = 'terms' in {root / 'config.toml'}: the table has no values in "
        "column 'terms' (only Ozaki methods have it); choose one of: auto, size, m, n, k"
    )
    # overridden (one figure shows it: the TFLOP/s one is not drawn)
    assert main(["plot", str(root), "--x", "k", "--metric", "err_fro", "--format", "png"]) == 0
    assert (root / "figures" / "err_fro.png").exists()


def test_x_size_on_non_square_shapes_is_named(tmp_path, capsys):
    root = _results_dir(tmp_path, rows(shape=lambda s: (64, 64, s)))
    assert main(["plot", str(root), "--x", "size"]) == 2
    assert _error_line(capsys) == (
        "error: --x size: the table has non-square shapes (m = n = k does not hold in every "
        "row); choose one of: auto, m, n, k"
    )


# ----------------------------------------------------------------------------- not a results dir


def test_a_path_that_is_not_a_results_directory_says_which_to_give(tmp_path, capsys):
    """`precision plot configs/quickstart.toml` said the existing file "does not exist"; a
    folder of results directories said only that it had no table."""
    config = tmp_path / "q.toml"
    config.write_text(SWEEP.replace('name = "p"', 'name = "quick"'))
    assert main(["plot", str(config)]) == 2
    assert _error_line(capsys) == (
        f"error: {config} is a config file; plot takes the results directory its run writes: "
        "precision plot results/quick (or <--results-dir>/quick)"
    )
    root = _results_dir(tmp_path)  # tmp_path/res
    assert main(["plot", str(tmp_path)]) == 2
    line = _error_line(capsys)
    assert line == f"error: {tmp_path} holds results directories (res); plot one of them: {root}"
    assert main(["plot", str(tmp_path / "rse")]) == 2
    line = _error_line(capsys)
    missing = tmp_path / "rse"
    assert (
        line
        == f"error: {missing} does not exist; did you mean {str(root)!r}? (run the config first)"
    )
    assert main(["plot", str(root / "results.parquet")]) == 2
    assert "is a file, not a results directory" in _error_line(capsys)
    # a folder with nothing of a run ("no results table at .../results.parquet" before)
    (tmp_path / "empty").mkdir()
    assert main(["plot", str(tmp_path / "empty")]) == 2
    assert _error_line(capsys) == (
        f"error: {tmp_path / 'empty'} is not a results directory: it holds no results.parquet, "
        "points/ or config.toml (precision run CONFIG writes them to results/<name>/)"
    )
