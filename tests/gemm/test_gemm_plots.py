"""The speed-and-accuracy figure of a bench-gemm table, from small hand-made tables."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from precision.gemm.gemm_plots import kernel_label, main, plot_speed_accuracy, speed_accuracy_rows


def _row(method, fmt, backend, n, err, tflops, sustained=math.nan, correction=None, **extra):
    dist = extra.pop("distribution", "uniform")
    return dict(method=method, correction=correction, format=fmt, backend=backend, n=n,
                distribution=dist, tflops=tflops, tflops_sustained=sustained, err_fro=err,
                reference="dgemm_fp64", **extra)  # fmt: skip


@pytest.mark.parametrize(
    ("method", "fmt", "correction", "backend", "label"),
    [("plain", "fp32", None, "cublas", "cuBLAS SGEMM"),
     ("plain", "bf16", None, "cublas", "cuBLAS bf16"),
     ("corrected", "fp16", "ootomo", "cublas", "cuBLAS fp16, corrected (3 GEMMs)"),
     ("corrected", "tf32", "markidis", "cuda", "corrected tf32 (Markidis)"),
     ("satf", "fp16", None, "cuda", "satf fp16")],
)  # fmt: skip
def test_kernels_are_named_by_what_they_compute(method, fmt, correction, backend, label):
    row = pd.Series({"method": method, "format": fmt, "correction": correction, "backend": backend})
    assert kernel_label(row) == label


def test_rows_are_the_uniform_ones_at_the_largest_n_most_accurate_first():
    table = pd.DataFrame([
        _row("plain", "fp32", "cublas", 8192, 1.6e-6, 50.0, 49.0),
        _row("corrected", "fp16", "cuda", 8192, 2.5e-7, 170.0, 151.0, correction="ootomo"),
        _row("plain", "fp16", "cuda", 8192, 2.6e-4, 570.0, 509.0),
        _row("satf", "fp16", "cuda", 8192, 2.6e-4, 565.0, 501.0),
        _row("plain", "fp16", "cuda", 4096, 2.6e-4, 410.0),  # another size
        _row("plain", "fp16", "cuda", 8192, 2.9e-4, 560.0, 500.0, distribution="exp_rand"),
    ])  # fmt: skip
    rows, n = speed_accuracy_rows(table)
    assert n == 8192
    # equal errors: the faster first; the sustained speed where the table has one
    assert list(rows["label"]) == ["corrected fp16 (Ootomo)", "cuBLAS SGEMM", "plain fp16",
                                   "satf fp16"]  # fmt: skip
    assert list(rows["speed"]) == [151.0, 49.0, 509.0, 501.0]
    rows, n = speed_accuracy_rows(table, 4096)  # no sustained column value: the burst one
    assert (n, list(rows["speed"])) == (4096, [410.0])
    with pytest.raises(ValueError, match=r"no rows at n = 1024 \(the table has n = 4096, 8192\)"):
        speed_accuracy_rows(table, 1024)


def test_figure_written_and_unusable_tables_refused_in_one_line(tmp_path: Path, capsys):
    csv = tmp_path / "gemm.csv"
    pd.DataFrame([
        _row("plain", "fp32", "cublas", 256, 1e-6, 5.0),
        _row("corrected", "fp16", "cuda", 256, 2e-7, 9.0, correction="ootomo"),
    ]).to_csv(csv, index=False)  # fmt: skip
    [path] = plot_speed_accuracy(csv, tmp_path / "fig")
    assert path == tmp_path / "fig" / "gemm_speed_accuracy.png"
    assert path.stat().st_size > 10_000
    # vector formats on request, for a paper
    assert main([str(csv), "--out", str(tmp_path / "vec"), "--format", "pdf,SVG"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(tmp_path / "vec" / f"gemm_speed_accuracy.{f}") for f in ("pdf", "svg")]
    assert (tmp_path / "vec" / "gemm_speed_accuracy.pdf").read_bytes().startswith(b"%PDF")
    assert b"<svg" in (tmp_path / "vec" / "gemm_speed_accuracy.svg").read_bytes()[:2000]
    with pytest.raises(SystemExit):  # argparse's own message, exit status 2
        main([str(csv), "--out", str(tmp_path / "vec2"), "--format", "png,jpeg"])
    assert "'png,jpeg': expected one or more of png, pdf, svg" in capsys.readouterr().err
    assert not (tmp_path / "vec2").exists()

    assert main([str(csv), "--out", str(tmp_path / "fig2"), "--n", "512"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {csv}: no rows at n = 512 (the table has n = 256)\n"
    pd.DataFrame([{"method": "plain", "n": 256}]).to_csv(csv, index=False)
    assert main([str(csv), "--out", str(tmp_path / "fig2")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {csv}: no column correction, format, backend, distribution, ")
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "fig2").exists()
