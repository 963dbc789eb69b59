"""The Ozaki bench figures from a small synthetic bench table (no GPU needed)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from precision.gemm.ozaki_plots import _label, plot_bench


def _row(method: str, n: int, tflops: float, **extra: object) -> dict:
    t = 2 * n**3 / (tflops * 1e12)
    return dict(method=method, target="fp64", fmt="int8", terms=extra.pop("terms", ""),
                backend="cuda", n=n, phi=0.5, tflops=tflops, tflops_sustained=tflops,
                err_median=float("nan"), err_max=float("nan"), ms_sustained=t * 1e3,
                pj_per_flop=12.0, **extra)  # fmt: skip


def test_figures_written_and_empty_table_refused(tmp_path: Path) -> None:
    rows = []
    for n in (8192, 16384):
        rows.append(_row("dgemm", n, 54.0))
        phases = dict(ms_stats=0.3, ms_split=0.8, ms_gemm=10.5, ms_reconstruct=0.5, ms_specials=0)
        rows.append(_row("ozaki2", n, 80.0, terms=15, moduli=15.0, gemm="fused", **phases))
    csv = tmp_path / "bench.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    written = plot_bench(csv, tmp_path / "fig")
    assert [p.name for p in written] == ["ozaki_speed.png", "ozaki_phases.png", "ozaki_energy.png"]
    assert all(p.stat().st_size > 10_000 for p in written)
    pd.DataFrame([{**rows[0], "tflops_sustained": float("nan")}]).to_csv(csv, index=False)
    with pytest.raises(ValueError, match="no timed rows"):
        plot_bench(csv, tmp_path / "fig2")


@pytest.mark.parametrize(
    ("terms", "label"),
    [("", "cuBLAS FP64 emu."), (float("nan"), "cuBLAS FP64 emu."),
     ("48", "cuBLAS FP64 emu. 48 bits"), (56, "cuBLAS FP64 emu. 56 bits"),
     (56.0, "cuBLAS FP64 emu. 56 bits")],
)  # fmt: skip
def test_cublas_emulation_rows_are_labelled_by_their_bits(terms: object, label: str) -> None:
    """The dynamic default and each fixed mantissa-bit count get bars of their own."""
    row = pd.Series({"method": "cublas_fp64_emulated_eager", "target": "fp64", "terms": terms})
    assert _label(row) == label


def _bench_csv(path: Path) -> Path:
    pd.DataFrame([_row("dgemm", 64, 54.0)]).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ('a = 1\n[table]\nb = "x, y, z"\n', "cannot read it as a csv table (Error tokenizing"),
        ("", "cannot read it as a csv table (No columns to parse from file)"),
        ("variant,status,err_median\nv,ok,1e-16\n", "no column method, target, terms, n, phi, "
         "tflops_sustained, ms_sustained, pj_per_flop (the figures need the columns"),
    ],
    ids=["missing", "toml", "empty", "runner-results"],
)  # fmt: skip
def test_cli_unusable_table_is_one_line_and_makes_no_out_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: str | None, expected: str
) -> None:
    # these were FileNotFoundError / ParserError / KeyError tracebacks
    from precision.gemm.ozaki_plots import main

    table = tmp_path / "input.csv"
    if content is not None:
        table.write_text(content)
    assert main([str(table), "--out", str(tmp_path / "fig")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {table}: {expected}"), err
    assert not (tmp_path / "fig").exists()


@pytest.mark.parametrize(
    ("out", "expected"),
    [("afile", "--out {out}: not a directory (expected a directory name)"),
     ("afile/sub", "--out {out}: cannot write in {out} (Not a directory)")],
)  # fmt: skip
def test_cli_unusable_out_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, out: str, expected: str
) -> None:
    # these were FileExistsError / NotADirectoryError tracebacks
    from precision.gemm.ozaki_plots import main

    csv = _bench_csv(tmp_path / "bench.csv")
    (tmp_path / "afile").write_text("not a directory\n")
    dest = tmp_path / out
    assert main([str(csv), "--out", str(dest)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == ["error: " + expected.format(out=dest)]
    assert (tmp_path / "afile").read_text() == "not a directory\n"


def test_ozaki2_bars_name_their_moduli_and_gemm_path() -> None:
    row = {"method": "ozaki2", "target": "fp64", "terms": "auto", "moduli": 16.0, "gemm": "fused"}
    assert _label(pd.Series(row)) == "ozaki2 fp64, auto: 16 moduli"
    row = {**row, "target": "fp32", "terms": 8.0, "moduli": 8.0, "gemm": "cublas"}
    assert _label(pd.Series(row)) == "ozaki2 fp32, 8 moduli, cuBLAS INT8"


def test_every_panel_lists_the_bars_in_one_order() -> None:
    """Fastest first at the smallest n; a bar only at a larger n follows (each panel used to
    sort its own bars, so a configuration moved between panels)."""
    from precision.gemm.ozaki_plots import bar_order

    d = pd.DataFrame({"n": [8192, 8192, 16384, 16384, 16384],
                      "label": ["A", "B", "B", "A", "C"],
                      "tflops_sustained": [10.0, 20.0, 5.0, 30.0, 40.0]})  # fmt: skip
    assert bar_order(d, "tflops_sustained") == ["B", "A", "C"]


def test_bars_that_miss_dgemm_accuracy_at_phi_up_to_1_are_found() -> None:
    """The issue's lines: median <= DGEMM's and max <= 2x DGEMM's, at phi 0, 0.5 and 1 and
    every error size; phi = 2 rows do not count, and no GEMM path is part of the verdict."""
    from precision.gemm.ozaki_plots import dgemm_accuracy_verdicts

    def err(method: str, terms: object, n: int, phi: float, med: float, mx: float) -> dict:
        return dict(method=method, target="fp64", terms=terms, n=n, phi=phi, err_median=med,
                    err_max=mx, tflops_sustained=float("nan"))  # fmt: skip

    rows = [
        err("dgemm", "", 4096, 0.5, 1e-15, 1e-8),
        err("dgemm", "", 8192, 1.0, 2e-15, 4e-8),
        err("dgemm", "", 4096, 2.0, 1e-15, 1e-8),
        # within both lines (the maximum exactly twice DGEMM's) at both points
        err("ozaki2", 15, 4096, 0.5, 1e-16, 2e-8),
        err("ozaki2", 15, 8192, 1.0, 2e-15, 1e-8),
        # the median above DGEMM's at one point only
        err("ozaki2", 14, 4096, 0.5, 1e-15, 1e-8),
        err("ozaki2", 14, 8192, 1.0, 3e-15, 1e-8),
        # far off, but only at phi = 2
        err("ozaki2", 16, 4096, 0.5, 0.0, 0.0),
        err("ozaki2", 16, 4096, 2.0, 1e-10, 1e-3),
        err("cublas_fp64_emulated_eager", 48.0, 4096, 0.5, 1e-15, 3e-8),
    ]
    verdicts = dgemm_accuracy_verdicts(pd.DataFrame(rows))
    assert verdicts == {
        ("ozaki2", "fp64", "15"): True,
        ("ozaki2", "fp64", "14"): False,
        ("ozaki2", "fp64", "16"): True,
        ("cublas_fp64_emulated_eager", "fp64", "48"): False,
    }
