"""What a paper needs of the figures and tables: PDFs without Type 3 fonts, distributions named
as a reader writes them (U(−1, 1), "exp_rand, φ = 1"), numbers with exactly three significant
digits, and notes where a value needs one: err_max set by near-zero entries, TFLOP/s timed
while several points ran at once, numpy's multithreaded BLAS on a shared machine."""

from __future__ import annotations

import json
import re

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from precision.runner.cli import main
from precision.runner.figures import PlotSpec
from precision.runner.plotting import (
    BLAS_NOTE,
    ERR_MAX_NOTE,
    draw_figure,
    prepare,
    read_runs,
    readable_distribution,
    run_concurrency,
    timing_notes,
)
from precision.runner.summary import _fmt, _latex_escape, _latex_number, pivot, write_summary

SIZES = (32, 64, 128)
U_PARAMS = json.dumps({"high": 1.0, "low": -1.0}, sort_keys=True)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def rows(
    dists=(("uniform", "uniform(low=-1, high=1)", U_PARAMS),),
    series=(("plain", "fp16", "emulator"), ("plain", "fp32", "numpy")),
    value=1e-4,
    created="2026-01-01T00:00:10+00:00",
) -> pd.DataFrame:
    """Rows as `precision run` writes them (full dist_params, wall-clock timing)."""
    out = []
    for name, label, params in dists:
        for variant, fmt, backend in series:
            for size in SIZES:
                for rep in range(2):
                    out.append(
                        {
                            "name": "polish", "point_id": f"{label}{variant}{fmt}{backend}{size}",
                            "m": size, "n": size, "k": size, "distribution": name,
                            "dist_label": label, "dist_params": params, "method": "plain",
                            "correction": None, "variant": variant, "format": fmt,
                            "backend": backend, "arch": "sm90", "repeat": rep, "status": "ok",
                            "error": None, "err_fro": value, "err_max": 10 * value,
                            "err_median": value / 2, "tflops": 1e-5 * size, "time_s": 1e-3,
                            "timing": "wall", "created_utc": created,
                        }
                    )  # fmt: skip
    return pd.DataFrame(out)


def figure_text(fig) -> str:
    return " ".join(" ".join(t.get_text().split()) for sub in fig.subfigs for t in sub.texts)


def panel_titles(fig) -> list[str]:
    return [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]


# ----------------------------------------------------------------------------- fonts


def test_pdf_embeds_truetype_fonts_not_type3(tmp_path):
    """IEEE PDF eXpress and the ACM checks reject Type 3 fonts (matplotlib's default)."""
    from precision.runner.plotting import plot_results

    spec = PlotSpec(metrics=("err_fro",), formats=("pdf",))
    (path,) = [p for p in plot_results(rows(), tmp_path, "t", spec) if p.suffix == ".pdf"]
    data = path.read_bytes()
    assert b"/Type3" not in data
    # the text (mathtext of the u = 2^-24 legend entry included) is embedded as TrueType
    assert b"/CIDFontType2" in data or b"/TrueType" in data


# ----------------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    "name, params, label",
    [
        ("uniform", {"low": -1.0, "high": 1.0}, "U(−1, 1)"),
        ("uniform", {"low": 0.0, "high": 0.5}, "U(0, 0.5)"),
        ("exp_rand", {"phi": 1.0}, "exp_rand, φ = 1"),
        ("exp_rand", json.dumps({"phi": 0.5}), "exp_rand, φ = 0.5"),  # the dist_params JSON
        ("normal", {"mean": 0.0, "std": 1.0}, "N(0, 1)"),
        ("normal", {"mean": -2.0, "std": 3.0}, "N(−2, 3²)"),
        ("wide_range", {"exp_min": -12, "exp_max": 12}, "wide_range, e ∈ [−12, 12]"),
        ("cancellation", {"eps": 0.25}, "cancellation, ε = 0.25"),
        ("exp_rand", {"phi": 1.0000001}, "exp_rand, φ = 1.0000001"),  # (":g" wrote φ = 1)
        ("normal", {"mean": 1000001.0, "std": 1.0}, "N(1000001.0, 1)"),  # (and 1e+06)
        ("exp_rand", {}, None),  # incomplete: the raw label is shown
        ("uniform", {"low": -1.0}, None),
        ("uniform", "not json", None),
        ("lognormal", {"sigma": 1.0}, None),  # unknown
    ],
)
def test_readable_distribution(name, params, label):
    assert readable_distribution(name, params) == label


def test_figure_and_tables_name_distributions_readably_and_alike():
    """The quickstart spells U(-1, 1) out, another config writes a bare "uniform": both read
    U(−1, 1); the dist_label column of summary.csv keeps the config's spelling."""
    dists = (
        ("uniform", "uniform(low=-1, high=1)", U_PARAMS),
        ("exp_rand", "exp_rand(phi=1)", json.dumps({"phi": 1.0})),
    )
    spec = PlotSpec(metrics=("err_fro",))
    frame = prepare(rows(dists=dists), spec, "err_fro")
    titles = panel_titles(draw_figure(frame, "err_fro", spec, "t"))
    assert sorted(titles) == ["U(−1, 1)", "exp_rand, φ = 1"]
    bare = prepare(rows(dists=(("uniform", "uniform", U_PARAMS),)), spec, "err_fro")
    assert set(bare.data["_col"]) == {"U(−1, 1)"}

    piv = pivot(rows(dists=dists), spec, "err_fro")
    assert set(piv.index.get_level_values("distribution")) == {"U(−1, 1)", "exp_rand, φ = 1"}
    tex = _latex_escape("U(−1, 1) exp_rand, φ = 1 N(0, 2²) e ∈ [a, b] ε")
    assert tex == (
        r"U($-$1, 1) exp\_rand, $\varphi$ = 1 N(0, 2\textsuperscript{2}) e $\in$ [a, b] "
        r"$\varepsilon$"
    )
    assert not re.search(r"[^\x00-\x7f]", tex)  # pdflatex has no glyph for those


def test_summary_csv_keeps_dist_label(tmp_path):
    write_summary(rows(), tmp_path, PlotSpec(metrics=("err_fro",)))
    csv = pd.read_csv(tmp_path / "summary.csv")
    assert set(csv["dist_label"]) == {"uniform(low=-1, high=1)"}
    md = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "| U(−1, 1) | plain |" in md
    assert r"U($-$1, 1)" in (tmp_path / "summary.tex").read_text(encoding="utf-8")


def test_labels_that_would_read_alike_stay_apart():
    """Two dist_labels never merge into one panel: where their readable forms coincide (a
    hand-made table), both keep their raw labels."""
    dists = (
        ("uniform", "uniform(low=-1, high=1)", U_PARAMS),
        ("uniform", "uniform", U_PARAMS),
    )
    frame = prepare(rows(dists=dists), PlotSpec(), "err_fro")
    assert set(frame.data["_col"]) == {"uniform(low=-1, high=1)", "uniform"}


# ----------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    "value, text, latex",
    [
        (0.026, "0.0260", "0.0260"),  # trailing zero kept: three significant digits
        (0.0281, "0.0281", "0.0281"),
        (0.705, "0.705", "0.705"),
        (2.0, "2.00", "2.00"),
        (16.2, "16.2", "16.2"),
        (105.0, "105", "105"),
        (9.996, "10.0", "10.0"),  # rounded up: still three digits
        (0.0099996, "0.0100", "0.0100"),  # rounds up into plain notation
        (0.00423, "4.23e-03", r"$4.23\times10^{-3}$"),  # below 0.01: scientific
        (999.6, "1.00e+03", r"$1.00\times10^{3}$"),  # from 1000 on: scientific
        (1234.0, "1.23e+03", r"$1.23\times10^{3}$"),
        (2.06e-7, "2.06e-07", r"$2.06\times10^{-7}$"),
        (-0.026, "-0.0260", "-0.0260"),
        (0.0, "0", "0"),
        (float("nan"), "n/a", "n/a"),
        (float("inf"), "n/a", "n/a"),
    ],
)
def test_table_numbers_have_exactly_three_significant_digits(value, text, latex):
    assert _fmt(value) == text
    assert _latex_number(value) == latex


# ----------------------------------------------------------------------------- err_max


def test_err_max_of_one_or_more_gets_a_note(tmp_path):
    spec = PlotSpec(metrics=("err_max",), formats=("png",))
    big = rows(value=0.5)  # err_max 5: set by entries near 0
    frame = prepare(big, spec, "err_max")
    assert frame.caveats == [ERR_MAX_NOTE]
    assert ERR_MAX_NOTE.split(":")[0] in figure_text(draw_figure(frame, "err_max", spec, ""))
    write_summary(big, tmp_path, spec)
    assert f"Note: {ERR_MAX_NOTE}." in (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert prepare(rows(value=1e-4), spec, "err_max").caveats == []  # below 1: nothing to say
    assert prepare(big, spec, "err_fro").caveats == []


# ----------------------------------------------------------------------------- timing notes


def run(created="2026-01-01T00:00:00+00:00", **fields) -> dict:
    base = {"created_utc": created, "executor": "local", "jobs": None, "scheduler": None}
    return {**base, "gpus": None, "cpu_count": 2, **fields}


def test_timing_with_several_jobs_is_noted_and_one_job_is_not():
    table = rows(series=(("plain", "fp16", "emulator"),))
    notes = timing_notes(table, [run(jobs=2, concurrent_jobs=2)])
    assert len(notes) == 1 and "timed with up to 2 points computed at once (--jobs 2)" in notes[0]
    assert timing_notes(table, [run(jobs=1)]) == []
    assert timing_notes(table, [run()]) == []  # --jobs not given: one
    assert timing_notes(table, None) == []  # unknown: nothing claimed


def test_timing_note_names_the_run_that_computed_the_rows():
    """Rows belong to the latest run that started before they were made: a resumed run with
    --jobs 2 after a one-job run concerns only the rows it computed."""
    early = rows(series=(("plain", "fp16", "emulator"),), created="2026-01-01T00:00:05+00:00")
    late = early.assign(point_id=early["point_id"] + "b", created_utc="2026-01-02T00:00:05+00:00")
    runs = [run(), run(created="2026-01-02T00:00:00+00:00", jobs=2)]
    assert timing_notes(early, runs) == []
    (note,) = timing_notes(pd.concat([early, late], ignore_index=True), runs)
    assert f"({len(late)} of {2 * len(late)} rows)" in note


def test_gpu_timings_on_their_own_gpus_are_not_noted():
    """--gpus: each GPU times one GEMM at a time (docs/runner.md); CPU workers beside them
    share the host."""
    table = rows(series=(("plain", "fp16", "cuda"),)).assign(timing="cuda_events")
    gpus = run(executor="dask", gpus=["0", "1"], jobs=None)
    assert run_concurrency(gpus)[0] == 2
    assert timing_notes(table, [gpus]) == []
    (note,) = timing_notes(table, [{**gpus, "jobs": 4}])
    assert "--gpus: 2 GPU and 4 CPU workers" in note
    dask = run(executor="dask", cpu_count=8)
    assert run_concurrency(dask) == (8, 0, "--executor dask, 8 workers")  # one per core
    assert run_concurrency(run(executor="dask", scheduler="tcp://h:8786"))[0] is None


def test_timings_of_two_machines_are_noted():
    """A run resumed on another machine: its CPU-timed rows come from two CPUs."""
    table = rows(series=(("plain", "fp16", "emulator"),)).assign(cpu="Xeon", cpu_count=2)
    assert timing_notes(table, None) == []
    other = table.assign(point_id=table["point_id"] + "b", cpu_count=16)
    (note,) = timing_notes(pd.concat([table, other], ignore_index=True), None)
    assert note.startswith(f"CPU timings from 2 machines: Xeon ×16 ({len(table)} rows), Xeon ×2")
    # GPU rows: the GPU model decides, not the host's CPU; CPU and GPU rows side by side are
    # one machine's work
    gpu = table.assign(backend="cuda", timing="cuda_events", gpu="NVIDIA H200", cpu_count=16)
    assert timing_notes(pd.concat([table, gpu], ignore_index=True), None) == []
    h100 = gpu.assign(point_id=gpu["point_id"] + "h", gpu="NVIDIA H100")
    (note,) = timing_notes(pd.concat([gpu, h100], ignore_index=True), None)
    assert note.startswith("GPU timings from 2 machines: NVIDIA H100")
    assert timing_notes(table.drop(columns=["cpu"]), None) == []  # older rows: unknown


def test_pdf_and_svg_figures_are_byte_reproducible(tmp_path):
    """No creation date in PDF or SVG, and SVG's clip-path ids are salted: a redrawn table
    gives the same bytes, so a figure can be checked against its table."""
    from precision.runner.plotting import plot_results

    spec = PlotSpec(metrics=("err_fro",), formats=("pdf", "svg"))
    first = {p.name: p.read_bytes() for p in plot_results(rows(), tmp_path / "a", "t", spec)}
    again = {p.name: p.read_bytes() for p in plot_results(rows(), tmp_path / "b", "t", spec)}
    assert {"err_fro.pdf", "err_fro.svg"} <= set(first) and first == again
    # (two draws within one second would match anyway: the date itself must be absent)
    assert b"/CreationDate" not in first["err_fro.pdf"]
    assert b"<dc:date>" not in first["err_fro.svg"]


def test_numpy_timings_carry_the_blas_threads_caveat_unless_single_threaded():
    table = rows()  # numpy SGEMM rows timed by the wall clock
    assert timing_notes(table, None) == [BLAS_NOTE]
    single = run(blas_threads_env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": None})
    assert timing_notes(table, [single]) == []
    omp = run(blas_threads_env={"OPENBLAS_NUM_THREADS": None, "OMP_NUM_THREADS": "1"})
    assert timing_notes(table, [omp]) == []
    many = run(blas_threads_env={"OPENBLAS_NUM_THREADS": "4", "OMP_NUM_THREADS": "1"})
    assert len(timing_notes(table, [many])) == 1  # OpenBLAS reads its own variable first
    assert timing_notes(rows(series=(("plain", "fp16", "emulator"),)), None) == []


def test_run_with_two_jobs_records_it_and_says_so_under_the_tflops_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")  # recorded: no BLAS caveat
    (tmp_path / "cfg.toml").write_text(
        """
name = "jobs"
[[sweep]]
size = [8, 16]
distribution = ["uniform"]
method = ["plain"]
format = ["fp32"]
backend = ["numpy"]
[plot]
metric = ["err_fro", "tflops"]
format = "png"
"""
    )
    assert main(["run", "cfg.toml", "--quiet", "--jobs", "2"]) == 0
    root = tmp_path / "results" / "jobs"
    (record,) = read_runs(root)
    assert record["concurrent_jobs"] == 2
    assert record["blas_threads_env"]["OPENBLAS_NUM_THREADS"] == "1"
    md = (root / "figures" / "summary.md").read_text(encoding="utf-8")
    tflops = md.split("## tflops")[1]
    assert "Note: timed with up to 2 points computed at once (--jobs 2)" in tflops
    assert BLAS_NOTE not in md
    assert "Note:" not in md.split("## tflops")[0]  # the error table needs no such note

    # `precision plot` reads the same records (of the TFLOP/s figure and table, which say so)
    again_argv = ["--out", str(tmp_path / "again"), "--metric", "tflops", "--format", "png"]
    assert main(["plot", str(root), *again_argv]) == 0
    again = (tmp_path / "again" / "summary.md").read_text(encoding="utf-8")
    assert "(--jobs 2)" in again
    assert np.isfinite(pd.read_csv(tmp_path / "again" / "summary.csv")["tflops"]).all()


def test_a_given_size_too_small_for_legend_and_notes_keeps_its_panels():
    """A --size too small for two rows of panels, their legend and notes (one paper column):
    the panels keep a share of the height (the subfigure of the panels was dropped)."""
    import warnings

    spec = PlotSpec(metrics=("err_max",), hue="format", style="method", col="none", size=(3.3, 1.2))
    dists = (
        ("uniform", "uniform(low=-1, high=1)", U_PARAMS),
        ("exp_rand", "exp_rand(phi=1)", json.dumps({"phi": 1.0})),
    )
    frame = prepare(rows(dists=dists, value=0.5), spec, "err_max")
    assert frame.caveats and frame.split == ["distribution"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # matplotlib: "constrained_layout not applied"
        fig = draw_figure(frame, "err_max", spec, "")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 2  # drawn, not dropped (nor a StopIteration)


def test_pdf_and_svg_bytes_do_not_depend_on_the_process(tmp_path):
    """Drawn in two processes with different hash seeds, the published markidis_vs_ootomo
    error figure used to differ in its pdf and svg coordinates (the 13th digit of a clip
    box): matplotlib's layout solver gave positions whose last bits depended on the process.
    The drawn layout is now fixed and rounded before saving (plot_draw._frozen)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    results = Path(__file__).parents[2] / "results" / "h200" / "markidis_vs_ootomo"
    out = {}
    for seed in ("0", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        cmd = [sys.executable, "-m", "precision.runner.cli", "plot", str(results), "--out",
               str(tmp_path / seed), "--metric", "err_fro", "--format", "pdf,svg"]  # fmt: skip
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        out[seed] = {p.name: p.read_bytes() for p in (tmp_path / seed).glob("err_fro.*")}
    assert set(out["0"]) == {"err_fro.pdf", "err_fro.svg"} and out["0"] == out["2"]
