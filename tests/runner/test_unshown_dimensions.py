"""No figure point or summary cell pools distinct points, and none is silently computed from
part of its point's repeats: an identity dimension that the plot spec does not show and that
varies within a drawn cell becomes panel rows (said so under the figure and in summary.md),
and a cell holding only some of a point's repeats (``terms = "auto"`` repeats that chose
different counts, on a ``terms`` axis) is marked. Synthetic tables: no GEMM is computed."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from precision.runner.figures import PlotSpec
from precision.runner.plotting import (
    MAX_NOTE_LINES,
    cap_notes,
    draw_figure,
    prepare,
)
from precision.runner.summary import (
    LATEX_MARK,
    PARTIAL_MARK,
    pivot,
    pivot_cells,
    summarize,
    write_summary,
)

SIZES = (32, 64, 128)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def row(size: int = 32, rep: int = 0, value: float = 1e-4, **kw) -> dict:
    """One results row: plain fp16 on the sm90 emulator, uniform inputs, unless ``kw`` says
    otherwise (``point`` names the point; by default every identity column does)."""
    out = {
        "name": "u", "m": size, "n": size, "k": size,
        "distribution": "uniform", "dist_label": "uniform", "dist_params": "{}",
        "method": "plain", "correction": None, "variant": "plain", "format": "fp16",
        "backend": "emulator", "arch": "sm90", "target": None, "terms": np.nan,
        "terms_requested": None, "emulator_device": "cpu", "repeat": rep,
        "status": "ok", "error": None, "err_fro": value, "err_max": 10 * value,
        "err_median": value / 2, "tflops": 1e-5 * size, "time_s": 1.0,
    }  # fmt: skip
    out.update(kw)
    if "point_id" not in out:
        ids = ("dist_label", "k", "variant", "format", "backend", "arch", "target")
        more = ("terms_requested", "emulator_device")
        out["point_id"] = "/".join(str(out[c]) for c in ids + more)
    return out


def table(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def figure_text(fig) -> str:
    return " ".join(" ".join(t.get_text().split()) for sub in fig.subfigs for t in sub.texts)


def lines_by_panel(fig) -> dict[str, list[list[float]]]:
    """The y values of the drawn lines (two or more points) of each visible panel, by the
    panel's row label (its margin text; "" without one)."""
    out: dict[str, list[list[float]]] = {}
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        label = " ".join(t.get_text() for t in ax.texts)
        ys = [list(ln.get_ydata()) for ln in ax.get_lines() if len(ln.get_xdata()) == len(SIZES)]
        out.setdefault(label, []).extend(ys)
    return out


# ----------------------------------------------------------------------------- backends


def two_backends(baseline: bool = False, repeats: int = 3) -> pd.DataFrame:
    """plain fp16 on the emulator (error 1e-4) and on cuda (error 1e-2): one method, one
    format, one hue and style value, two points at every size."""
    rows = [
        row(size, rep, value, backend=backend)
        for backend, value in (("emulator", 1e-4), ("cuda", 1e-2))
        for size in SIZES
        for rep in range(repeats)
    ]
    if baseline:
        rows += [
            row(size, rep, 3e-7, format="fp32", backend="numpy")
            for size in SIZES
            for rep in range(repeats)
        ]
    return table(rows)


def test_backends_of_one_series_become_panel_rows_not_one_median():
    frame = prepare(two_backends(), PlotSpec(), "err_fro")
    assert frame.split == ["backend"]
    assert set(frame.data["_row"]) == {"backend = cuda", "backend = emulator"}
    fig = draw_figure(frame, "err_fro", PlotSpec(), "")
    lines = lines_by_panel(fig)
    # Each backend's own median in its own panel; never the pooled median of both.
    assert lines["backend = emulator"] == [[1e-4] * 3]
    assert lines["backend = cuda"] == [[1e-2] * 3]
    text = figure_text(fig)
    assert "Notes:" in text and "Not shown" not in text
    assert (
        "backend varies within series (plain fp16 [uniform] at size = 32: cuda and emulator): "
        "shown as panel rows; set hue/style/col/row to choose" in text
    )


def test_summary_pivot_has_the_same_rows_and_says_why():
    t = two_backends()
    piv = pivot(t, PlotSpec(), "err_fro")
    assert piv.index.names == ["distribution", "backend", "method", "format"]
    values = piv.droplevel(["distribution", "method", "format"])
    assert list(values.loc["backend = cuda"]) == [1e-2] * 3
    assert list(values.loc["backend = emulator"]) == [1e-4] * 3


def test_summary_md_and_tex_note_the_rows_split(tmp_path):
    write_summary(two_backends(), tmp_path, PlotSpec(metrics=("err_fro",)))
    md = (tmp_path / "summary.md").read_text()
    assert "| uniform | backend = cuda | plain | fp16 | 0.0100 | 0.0100 | 0.0100 |" in md
    assert "| uniform | backend = emulator | plain | fp16 | 1.00e-04 |" in md
    assert "Note: backend varies within series (plain fp16 [uniform] at size = 32" in md
    assert "% Note: backend varies within series" in (tmp_path / "summary.tex").read_text()


def test_a_baseline_is_drawn_in_every_row_split_from_its_panel():
    """The numpy baseline (its series names its backend) is the reference of both backends'
    rows: drawn in each, listed once in the summary, not given a panel row of its own."""
    frame = prepare(two_backends(baseline=True), PlotSpec(), "err_fro")
    assert frame.split == ["backend"]
    lines = lines_by_panel(draw_figure(frame, "err_fro", PlotSpec(), ""))
    assert sorted(lines) == ["backend = cuda", "backend = emulator"]
    assert [3e-7] * 3 in lines["backend = cuda"] and [3e-7] * 3 in lines["backend = emulator"]
    piv = pivot(two_backends(baseline=True), PlotSpec(), "err_fro")
    backends = list(piv.index.get_level_values("backend"))
    assert sorted(backends) == ["", "backend = cuda", "backend = emulator"]  # baseline: once


def test_tflops_panels_already_split_by_device_add_no_backend_rows():
    frame = prepare(two_backends(), PlotSpec(), "tflops")
    assert frame.split == []  # emulator and cuda are on different devices: rows already
    assert set(frame.data["_row"]) == {"GPU", "CPU emulator (not a GPU speed)"}


# ----------------------------------------------------------------------------- constant


def test_dimensions_constant_within_every_cell_add_nothing():
    t = table(
        [
            row(size, rep, v, variant=variant, method=variant.split("-")[0], dist_label=dist,
                distribution=dist, format=fmt)
            for variant, v in (("plain", 1e-3), ("corrected-ootomo", 1e-6))
            for fmt in ("fp16", "bf16")
            for dist in ("uniform", "normal")
            for size in SIZES
            for rep in range(2)
        ]
        + [row(size, rep, 3e-7, format="fp32", backend="numpy", dist_label=dist,
               distribution=dist) for dist in ("uniform", "normal") for size in SIZES
           for rep in range(2)]
    )  # fmt: skip
    frame = prepare(t, PlotSpec(), "err_fro")
    assert frame.split == [] and frame.split_notes == [] and frame.terms_notes == []
    assert set(frame.data["_row"]) == {""}
    assert "Notes:" not in figure_text(draw_figure(frame, "err_fro", PlotSpec(), ""))


# ----------------------------------------------------------------------------- other dims


def test_arch_emulator_device_and_distribution_split_when_not_shown():
    arch = table([row(s, r, v, arch=a) for a, v in (("sm80", 1e-3), ("sm90", 1e-4))
                  for s in SIZES for r in range(2)])  # fmt: skip
    assert prepare(arch, PlotSpec(), "err_fro").split == ["arch"]
    assert set(prepare(arch, PlotSpec(), "err_fro").data["_row"]) == {"arch = sm80", "arch = sm90"}
    assert prepare(arch, PlotSpec(row="arch"), "err_fro").split == []  # shown: nothing to add

    device = table([row(s, r, 1e-4, emulator_device=e) for e in ("cpu", "gpu")
                    for s in SIZES for r in range(2)])  # fmt: skip
    frame = prepare(device, PlotSpec(), "err_fro")
    assert frame.split == ["emulator_device"]
    assert "; set hue" not in frame.split_notes[0]  # not a plot dimension: nothing to set
    assert prepare(device, PlotSpec(), "tflops").split == []  # device rows already
    # summary.csv keeps cpu and gpu engine rows of one point apart too
    assert len(summarize(device)) == 2 * len(SIZES)

    dists = table([row(s, r, v, distribution=d, dist_label=label)
                   for d, label, v in (("uniform", "uniform", 1e-4),
                                       ("exp_rand", "exp_rand(phi=2)", 1e-3))
                   for s in SIZES for r in range(2)])  # fmt: skip
    spec = PlotSpec(col="none")
    frame = prepare(dists, spec, "err_fro")
    assert frame.split == ["distribution"]
    assert set(frame.data["_row"]) == {"uniform", "exp_rand(phi=2)"}
    assert pivot(dists, spec, "err_fro").index.names == ["distribution", "method", "format"]


def test_method_splits_when_hue_and_style_show_other_things():
    t = table([row(s, r, v, variant=var, method=var.split("-")[0])
               for var, v in (("plain", 1e-3), ("corrected-ootomo", 1e-6))
               for s in SIZES for r in range(2)])  # fmt: skip
    spec = PlotSpec(hue="format", style="none", col="none")
    frame = prepare(t, spec, "err_fro")
    assert frame.split == ["method"]
    lines = lines_by_panel(draw_figure(frame, "err_fro", spec, ""))
    assert lines == {"corrected-ootomo": [[1e-6] * 3], "plain": [[1e-3] * 3]}


# ----------------------------------------------------------------------------- ozaki


def ozaki(
    size: int, rep: int, terms: float, requested: str, value: float, target: str = "fp64", **kw
) -> dict:
    return row(
        size, rep, value, method="ozaki2", variant="ozaki2", format="int8", target=target,
        terms=float(terms), terms_requested=requested, input_dtype="float64", **kw,
    )  # fmt: skip


def dgemm(size: int, rep: int = 0) -> dict:
    return row(size, rep, 3e-16, format="fp64", backend="numpy")


def test_auto_and_fixed_requests_at_one_term_count_are_two_rows_on_a_terms_axis():
    """x = terms: "auto" that chose 16 moduli and a fixed request of 16 land on one x; they
    are two points (the requested count is the identity), so two panel rows, and the DGEMM
    baseline (no target, no terms) is drawn as a level in both."""
    rows_ = [ozaki(64, 0, t, str(t), 10.0**-t) for t in (14, 15, 16)]
    rows_ += [ozaki(64, 0, 16, "auto", 5e-15)]
    rows_ += [dgemm(64)]
    spec = PlotSpec(metrics=("err_max",), x="terms", hue="method", style="none", col="none")
    frame = prepare(table(rows_), spec, "err_max")
    assert frame.split == ["terms_requested"]
    rows_seen = set(frame.data.loc[frame.data["_x"].notna(), "_row"])
    assert rows_seen == {"terms_requested = auto", "terms_requested = fixed"}
    fig = draw_figure(frame, "err_max", spec, "")
    drawn = {}  # err_max = 10 x the values given
    for ax in (a for a in fig.axes if a.get_visible()):
        ys = [list(ln.get_ydata()) for ln in ax.get_lines()]
        assert [3e-15, 3e-15] in ys  # the DGEMM level in both rows
        drawn[" ".join(t.get_text() for t in ax.texts)] = ys
    assert [5e-14] in drawn["terms_requested = auto"]  # never pooled with the fixed 16
    assert any(np.allclose(ys, [1e-13, 1e-14, 1e-15]) for ys in drawn["terms_requested = fixed"])
    piv = pivot(table(rows_), spec, "err_max")
    auto = piv.xs("terms_requested = auto", level="terms_requested")
    assert list(auto.iloc[0].dropna()) == [5e-14]


def test_targets_and_requested_counts_split_on_a_size_axis_not_chosen_counts():
    rows_ = [ozaki(s, 0, 16, "16", 1e-16, target="fp64") for s in SIZES]
    rows_ += [ozaki(s, 0, 8, "8", 1e-7, target="fp32") for s in SIZES]
    rows_ += [ozaki(s, 0, 14, "14", 1e-14, target="fp64") for s in SIZES]
    frame = prepare(table(rows_), PlotSpec(), "err_fro")
    assert frame.split == ["target", "terms_requested"]
    assert set(frame.data["_row"]) == {
        "target = fp32, terms_requested = 8",
        "target = fp64, terms_requested = 14",
        "target = fp64, terms_requested = 16",
    }


def auto_point(repeats_terms=(16, 16, 17), size: int = 64) -> list[dict]:
    """Three repeats of one ozaki2 terms = "auto" point; by default two chose 16 moduli
    (errors 1e-15, 3e-15) and one 17 (2e-16)."""
    return [
        ozaki(size, rep, t, "auto", v, point_id="auto64")
        for rep, (t, v) in enumerate(zip(repeats_terms, (1e-15, 3e-15, 2e-16), strict=True))
    ]


def test_chosen_counts_of_auto_repeats_are_pooled_on_a_size_axis_and_named():
    rows_ = auto_point() + [ozaki(s, 0, 16, "auto", 1e-15) for s in (32, 128)]
    spec = PlotSpec(metrics=("err_fro",), col="none")
    frame = prepare(table(rows_), spec, "err_fro")
    assert frame.split == []  # the chosen count is an outcome, not the point's identity
    assert frame.terms_notes == ["ozaki2 int8: repeats chose 16 and 17 terms at size = 64"]
    fig = draw_figure(frame, "err_fro", spec, "")
    assert "ozaki2 int8: repeats chose 16 and 17 terms at size = 64" in figure_text(fig)
    assert lines_by_panel(fig)[""] == [[1e-15, 1e-15, 1e-15]]  # median of all three repeats
    _, marks, _ = pivot_cells(table(rows_), spec, "err_fro")
    assert not marks.to_numpy().any()  # every cell holds all repeats of its point


def test_cells_from_part_of_the_repeats_are_marked_on_a_terms_axis(tmp_path):
    rows_ = auto_point() + [ozaki(64, r, 16, "16", 1e-14) for r in range(3)]
    t = table(rows_)
    spec = PlotSpec(metrics=("err_max",), x="terms", hue="method", style="none", col="none",
                    formats=("png",))  # fmt: skip
    frame = prepare(t, spec, "err_max")
    (note,) = frame.terms_notes
    assert note == (
        "ozaki2 [terms_requested = auto]: repeats chose 16 and 17 terms; "
        "each count's value is a median of part of the repeats"
    )
    assert note in figure_text(draw_figure(frame, "err_max", spec, ""))
    piv, marks, _ = pivot_cells(t, spec, "err_max")
    auto = marks.xs("terms_requested = auto", level="terms_requested").iloc[0]
    fixed = marks.xs("terms_requested = fixed", level="terms_requested").iloc[0]
    assert auto.to_dict() == {"16": True, "17": True}
    assert not fixed.any()

    # (the summary that plot_results writes after the figure: the figure is checked above)
    write_summary(t, tmp_path, spec)
    md = (tmp_path / "summary.md").read_text()
    assert "# Summary: median over 3 repeat(s) per point" in md
    auto_line = next(line for line in md.splitlines() if "terms_requested = auto" in line)
    assert auto_line.endswith(f"| 2.00e-14{PARTIAL_MARK} | 2.00e-15{PARTIAL_MARK} |")
    fixed_line = next(line for line in md.splitlines() if "terms_requested = fixed" in line)
    assert PARTIAL_MARK not in fixed_line
    footnotes = [line for line in md.splitlines() if line.startswith(PARTIAL_MARK)]
    assert len(footnotes) == 1 and "fewer repeats than the point has" in footnotes[0]
    tex = (tmp_path / "summary.tex").read_text()
    assert tex.count(LATEX_MARK) == 3  # two cells and the footnote
    assert "fewer repeats than the point has" in tex


def test_auto_repeats_without_a_count_mark_the_cells_of_the_others():
    """A failed repeat of an auto point has no count (no x on a terms axis): the cell of the
    repeats that did run is the median of part of the point's repeats."""
    rows_ = auto_point((16, 16, 16))
    rows_[2].update(terms=np.nan, status="error", err_max=np.nan)
    spec = PlotSpec(metrics=("err_max",), x="terms", hue="method", style="none", col="none")
    _, marks, _ = pivot_cells(table(rows_), spec, "err_max")
    assert marks.to_numpy().all()


def test_chosen_counts_shown_as_hue_name_the_request():
    rows_ = auto_point()
    spec = PlotSpec(metrics=("err_fro",), hue="terms", col="none")
    frame = prepare(table(rows_), spec, "err_fro")
    assert frame.split == []
    assert frame.terms_notes == [
        "auto terms int8: repeats chose 16 and 17 terms at size = 64; "
        "each count's value is a median of part of the repeats"
    ]
    _, marks, _ = pivot_cells(table(rows_), spec, "err_fro")
    assert marks.to_numpy().all()  # 16 terms: 2 of 3 repeats, 17 terms: 1 of 3


# ----------------------------------------------------------------------------- notes


def test_notes_are_capped_and_come_before_the_points_not_shown():
    t = two_backends()
    bad = (t["backend"] == "cuda") & (t["k"] == 64)
    t.loc[bad, ["status", "err_fro"]] = ["error", np.nan]
    fig = draw_figure(prepare(t, PlotSpec(), "err_fro"), "err_fro", PlotSpec(), "")
    text = figure_text(fig)
    assert text.index("Notes:") < text.index("backend varies") < text.index("Not shown")
    assert "plain fp16 [backend = cuda, uniform]: error at size = 64" in text

    # One auto point per distribution whose repeats chose 16 and 17 moduli: 8 lines, capped.
    many = table([ozaki(64, rep, t, "auto", 1e-15, point_id=f"auto-{i}", dist_label=f"d{i}",
                        distribution=f"d{i}")
                  for i in range(8) for rep, t in enumerate((16, 17))])  # fmt: skip
    frame = prepare(many, PlotSpec(), "err_fro")
    assert len(frame.terms_notes) == 8  # all kept; capped once, where shown
    shown = cap_notes(frame.split_notes + frame.terms_notes)
    assert len(shown) == MAX_NOTE_LINES
    assert shown[-1] == f"... and {8 - MAX_NOTE_LINES + 1} more"  # counts every note left out
    assert shown[0] == "ozaki2 int8 [d0]: repeats chose 16 and 17 terms at size = 64"
    text = figure_text(draw_figure(frame, "err_fro", PlotSpec(), ""))
    assert f"... and {8 - MAX_NOTE_LINES + 1} more" in text and "[d7]" not in text


def test_point_keys_without_point_id_ignore_the_chosen_count():
    rows_ = [{k: v for k, v in r.items() if k != "point_id"} for r in auto_point()]
    spec = PlotSpec(metrics=("err_max",), x="terms", hue="method", style="none", col="none")
    _, marks, _ = pivot_cells(table(rows_), spec, "err_max")
    assert marks.to_numpy().all()
    assert len(prepare(table(rows_), spec, "err_max").terms_notes) == 1


def test_series_and_point_keys_hold_no_nul() -> None:
    # pandas 3.0's factorize (under groupby) cuts object strings at a NUL: with NUL-joined
    # keys every series of one hue was one group there, whatever its style, and every
    # dimension looked split (seen on the GPU host's pandas 3.0.6; 3.1 is not affected).
    from precision.runner.plotting import SERIES_SEP, _point_keys

    frame = prepare(two_backends(baseline=True), PlotSpec(), "err_fro")
    methods = frame.data.loc[~frame.data["_baseline"], "_series"]
    assert methods.str.contains(SERIES_SEP, regex=False).all()
    assert not frame.data["_series"].str.contains("\x00", regex=False).any()
    assert not _point_keys(two_backends().drop(columns="point_id")).str.contains("\x00").any()
    assert frame.split == ["backend"]


def test_notes_of_an_unnamed_series_in_one_panel_start_cleanly():
    """hue and style "none", no col or row: the series and its panel have no name, and the
    notes say what they say without an empty "who"."""
    t = table(
        [row(s, r, v, variant=var, method=var.split("-")[0])
         for var, v in (("plain", 1e-3), ("corrected-ootomo", 1e-6))
         for s in SIZES for r in range(2)]
        + auto_point()
    )  # fmt: skip
    t.loc[t["k"] == 128, ["status", "err_fro"]] = ["error", np.nan]
    spec = PlotSpec(hue="none", style="none", col="none")
    frame = prepare(t, spec, "err_fro")
    assert frame.split_notes[0].startswith("method varies within series (at size = 32: ")
    assert frame.terms_notes == ["[ozaki2]: repeats chose 16 and 17 terms at size = 64"]
    text = figure_text(draw_figure(frame, "err_fro", spec, ""))
    assert "[plain]: error at size = 128" in text
    assert "( " not in text and " : " not in text


def test_a_baseline_split_by_one_dimension_joins_every_method_row_it_fits() -> None:
    # hue and style "none", one column: the methods are split by format and distribution,
    # the fp32 baseline (no format of its own to split by) by distribution only. It is drawn
    # in each format's row of its own distribution, and in no other distribution's rows.
    rows = [
        row(size, 0, value * (10 if dist == "normal" else 1), format=fmt, dist_label=dist)
        for dist in ("uniform", "normal")
        for fmt, value in (("fp16", 1e-4), ("bf16", 1e-3))
        for size in SIZES
    ]
    rows += [
        row(size, 0, 3e-7 * (10 if dist == "normal" else 1), format="fp32", dist_label=dist)
        for dist in ("uniform", "normal")
        for size in SIZES
    ]
    spec = PlotSpec(hue="none", style="none", col="none")
    frame = prepare(table(rows), spec, "err_fro")
    assert frame.split == ["format", "distribution"]
    lines = lines_by_panel(draw_figure(frame, "err_fro", spec, ""))
    assert sorted(lines) == sorted(
        f"format = {f}, {d}" for f in ("bf16", "fp16") for d in ("normal", "uniform")
    )
    for label, ys in lines.items():
        scale = 10 if "normal" in label else 1
        method = (1e-3 if "bf16" in label else 1e-4) * scale
        assert sorted(y[0] for y in ys) == pytest.approx(sorted([method, 3e-7 * scale]))


def test_a_dimension_shown_by_colour_that_splits_the_baselines_says_why(tmp_path) -> None:
    # hue = distribution: the methods are coloured by it, the black/grey baselines are not,
    # so only they vary within a series; the note says so instead of "set hue to choose".
    rows = [
        row(size, 0, v, dist_label=dist, format=fmt, backend=be)
        for dist in ("uniform", "normal")
        for fmt, be, v in (("fp16", "emulator", 1e-4), ("fp32", "numpy", 3e-7))
        for size in SIZES
    ]
    spec = PlotSpec(hue="distribution", col="none")
    frame = prepare(table(rows), spec, "err_fro")
    assert frame.split == ["distribution"]
    (note,) = frame.split_notes
    assert "not by distribution" in note and 'set col or row = "distribution"' in note
    assert "set hue/style/col/row" not in note


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        # hue = distribution also splits the baselines' series into panel rows
        (PlotSpec(metrics=("err_fro",), hue="distribution", col="none"),
         ["distribution", "distribution (hue)", "format"]),
        # col and style both show format
        (PlotSpec(metrics=("err_fro",), hue="distribution", col="format", style="format"),
         ["format", "distribution", "distribution (hue)", "format (style)"]),
    ],
)  # fmt: skip
def test_a_dimension_in_two_roles_names_both_summary_columns(tmp_path, spec, names) -> None:
    """`precision plot --hue distribution`, or --col format with the default style = format,
    used to write the figure and then fail on the summary: "Cannot create duplicate column
    labels". The second column of a dimension now says its role."""
    rows = [
        row(size, 0, v, dist_label=dist, format=fmt, backend=be)
        for dist in ("uniform", "normal")
        for fmt, be, v in (("fp16", "emulator", 1e-4), ("fp32", "numpy", 3e-7))
        for size in SIZES
    ]
    assert list(pivot(table(rows), spec, "err_fro").index.names) == names
    paths = write_summary(table(rows), tmp_path, spec)
    header = (tmp_path / "summary.md").read_text().split("## err_fro")[1].splitlines()[2]
    assert header.startswith("| " + " | ".join(names) + " | 32 |")
    assert {p.name for p in paths} >= {"summary.md", "summary.tex", "summary.csv"}


def test_summary_md_names_auto_points_whose_repeats_chose_different_counts(tmp_path) -> None:
    spec = PlotSpec(metrics=("err_fro",), col="none")
    write_summary(table(auto_point()), tmp_path, spec)
    md = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "Note: ozaki2 int8: repeats chose 16 and 17 terms at size = 64." in md


# ------------------------------------------------------------------ nothing to draw


def ozaki2_row(size: int, value: float, terms: int, **kw) -> dict:
    """One results row of ozaki2 int8 to fp64 with ``terms`` moduli (requested as such)."""
    return row(size, 0, value, method="ozaki2", variant="ozaki2", format="int8", target="fp64",
               terms=float(terms), terms_requested=str(terms), **kw)  # fmt: skip


def legend_text(fig) -> str:
    return " ".join(t.get_text() for sub in fig.subfigs for lg in sub.legends for t in lg.texts)


def test_points_with_nothing_to_draw_leave_no_panel_row_and_no_legend_entry():
    """Ozaki points whose error is exactly 0 (nothing to draw on a log axis) used to add a
    panel row per requested term count, empty, and legend entries (ozaki2, int8, the fp64
    unit roundoff) with no line: the figure of the docs' example config was mostly blank."""
    rows = [row(size, 0, 1e-4) for size in SIZES]
    rows += [ozaki2_row(size, 0.0, terms) for terms in (14, 16) for size in SIZES]
    frame = prepare(table(rows), PlotSpec(), "err_fro")
    assert frame.split == ["terms_requested"]  # (still told apart in the notes)
    fig = draw_figure(frame, "err_fro", PlotSpec(), "")
    assert lines_by_panel(fig) == {"": [[1e-4] * 3]}
    legend = legend_text(fig)
    assert "plain" in legend and "fp16" in legend
    assert "ozaki2" not in legend and "int8" not in legend and "2^{-53}" not in legend
    text = figure_text(fig)
    assert "shown as panel rows" not in text
    for terms in (14, 16):
        assert (
            f"ozaki2 int8 [terms_requested = {terms}, uniform]: 0 (exact) at size = 32, 64, 128"
            in text
        )


def test_an_unavailable_baseline_adds_no_legend_entry_and_no_x_range():
    """A config with a cuBLAS baseline run on a machine without a GPU: its points are stored
    as unavailable. The figure used to draw its legend entry without a line and stretch the
    x axis to sizes that only it had."""
    rows = [row(size, 0, 1e-4) for size in SIZES]
    rows += [
        row(size, 0, np.nan, format="fp32", backend="cublas", status="unavailable")
        for size in (*SIZES, 1024, 4096)
    ]
    fig = draw_figure(prepare(table(rows), PlotSpec(), "err_fro"), "err_fro", PlotSpec(), "")
    assert "cuBLAS" not in legend_text(fig)
    (ax,) = [ax for ax in fig.axes if ax.get_visible()]
    assert ax.get_xlim()[1] < 256
    assert (
        "fp32 cuBLAS SGEMM [uniform]: unavailable at size = 32, 64, 128, 1024, 4096"
        in figure_text(fig)
    )


def test_a_split_whose_other_rows_are_not_drawn_is_not_said_to_be_shown():
    """A CPU rerun of a config with GPU points: the cuda rows are unavailable, so the rows
    split by backend show only the emulator. The note used to say "backend varies within
    series (... cuda and emulator): shown as panel rows" over one panel row."""
    rows = [row(size, 0, 1e-4) for size in SIZES]
    rows += [row(size, 0, np.nan, backend="cuda", status="unavailable") for size in SIZES]
    frame = prepare(table(rows), PlotSpec(), "err_fro")
    assert frame.split == ["backend"] and frame.split_notes == []
    fig = draw_figure(frame, "err_fro", PlotSpec(), "")
    assert lines_by_panel(fig) == {"backend = emulator": [[1e-4] * 3]}
    text = figure_text(fig)
    assert "varies within series" not in text
    assert "plain fp16 [backend = cuda, uniform]: unavailable at size = 32, 64, 128" in text


def test_a_dimension_no_channel_shows_becomes_panel_rows_where_the_legend_cannot_tell():
    """Ozaki scheme I (8 slices, fp64) and scheme II (8 moduli to fp32; 16 to fp64) drawn with
    hue = terms and style = target: the series never share a cell, so no series pooled two
    methods, but the legend named no method: "8 terms" appeared twice, once per scheme.
    The method now becomes panel rows. A dimension that follows the colour is told by the
    legend (φ as the colour, the distribution unshown) and splits nothing."""
    ozaki = {"format": "int8", "terms_requested": "fixed"}
    rows = [
        row(
            size, 0, err, method=method, variant=method, target=target, terms=float(terms), **ozaki
        )  # fmt: skip
        for method, target, terms, err in (
            ("ozaki1", "fp64", 8, 1e-12),
            ("ozaki2", "fp32", 8, 1e-7),
            ("ozaki2", "fp64", 16, 1e-16),
        )  # fmt: skip
        for size in SIZES
    ]
    spec = PlotSpec(hue="terms", style="target")
    frame = prepare(table(rows), spec, "err_fro")
    assert frame.split == ["method"]
    assert set(frame.data["_row"]) == {"ozaki1", "ozaki2"}
    (note,) = frame.split_notes
    assert note.startswith("method is shown by neither colour, line style nor panels")
    assert "ozaki1 and ozaki2" in note
    phis = [
        row(
            size,
            0,
            1e-4 * (1 + phi),
            distribution="exp_rand",
            dist_label=f"exp_rand(phi={phi})",
            dist_params=f'{{"phi": {phi}}}',
        )  # fmt: skip
        for phi in (0.0, 1.0)
        for size in SIZES
    ]
    frame = prepare(table(phis), PlotSpec(hue="phi", col="none"), "err_fro")
    assert frame.split == [] and frame.split_notes == []


def ozaki_and_baseline(dist: str, ozaki_err: float, baseline_err: float) -> list[dict]:
    """ozaki2 (14 and 16 moduli) and an fp64 numpy baseline on ``dist`` inputs, k = 64."""
    label = {"uniform": "uniform", "normal": "normal"}[dist]
    common = {"distribution": dist, "dist_label": label}
    rows = [ozaki2_row(64, ozaki_err, t, **common) for t in (14, 16)]
    rows.append(row(64, 0, baseline_err, format="fp64", backend="numpy", **common))
    return rows


def horizontal_levels(fig) -> dict[str, list[float]]:
    """The y of the horizontal lines (baseline levels, unit roundoffs) of each visible panel,
    by its title."""
    out: dict[str, list[float]] = {}
    for ax in (a for a in fig.axes if a.get_visible()):
        ys = [ln.get_ydata()[0] for ln in ax.get_lines() if list(ln.get_xdata()) == [0, 1]]
        out[ax.get_title()] = sorted(ys)
    return out


def test_a_terms_axis_whose_methods_are_all_exact_draws_the_baseline_level():
    """On a terms axis only the baselines' levels had a value (ozaki2 exact, error 0): the
    figure, laid out from the drawn rows alone, had no x value and raised ValueError."""
    spec = PlotSpec(x="terms", col="none")
    fig = draw_figure(prepare(table(ozaki_and_baseline("uniform", 0.0, 1e-16)), spec, "err_fro"),
                      "err_fro", spec, "")  # fmt: skip
    levels = horizontal_levels(fig)
    assert len(levels) == 1 and 1e-16 in next(iter(levels.values()))


def test_a_baseline_level_stays_in_its_own_panel_when_the_methods_there_are_exact():
    """Uniform panel: ozaki2 1e-15, baseline 2e-16; normal panel: ozaki2 exact, baseline
    1e-16. The normal panel was dropped and its level drawn in every panel, pooled with the
    uniform one into one line at their median, 1.5e-16."""
    rows = ozaki_and_baseline("uniform", 1e-15, 2e-16) + ozaki_and_baseline("normal", 0.0, 1e-16)
    spec = PlotSpec(x="terms", col="distribution")
    fig = draw_figure(prepare(table(rows), spec, "err_fro"), "err_fro", spec, "")
    levels = horizontal_levels(fig)
    assert len(levels) == 2
    roundoff = 2.0**-53  # (the fp64 unit roundoff line, in every panel)
    by_panel = {title: [y for y in ys if y != roundoff] for title, ys in levels.items()}
    assert sorted(by_panel.values()) == [[1e-16], [2e-16]]


def test_a_level_whose_label_lacks_a_row_dimension_keeps_its_own_size() -> None:
    """x = terms, panel rows by target (with k, which varies, appended): the DGEMM baseline
    has no target, so its row label ("k = 32") fitted no panel row ("fp64, k = 32") and it
    was drawn in every panel at its median over all sizes (an audit: 2.1e-13 in both rows,
    against 9.4e-14 at k = 32 and 7.4e-13 at k = 128). Each panel row now draws the level of
    its own k."""
    level = {32: 1e-14, 128: 1e-12}  # DGEMM's err_fro per size (err_max is 10x)
    rows_ = [
        ozaki(size, rep, t, str(t), 10.0**-t, target=target)
        for size in level
        for rep in range(2)
        for target in ("fp64", "fp32")
        for t in (6, 8)
    ]
    rows_ += [
        row(size, rep, level[size], format="fp64", backend="numpy")
        for size in level
        for rep in range(2)
    ]
    rows_ = [{**r, "m": 32, "n": 32} for r in rows_]  # (k alone varies: the size is k)
    spec = PlotSpec(metrics=("err_max",), x="terms", hue="method", style="none", row="target")
    fig = draw_figure(prepare(table(rows_), spec, "err_max"), "err_max", spec, "")
    levels: dict[str, set[float]] = {}
    for ax in (a for a in fig.axes if a.get_visible()):
        label = " ".join(" ".join(t.get_text().split()) for t in ax.texts)
        flat = [ln.get_ydata()[0] for ln in ax.get_lines() if list(ln.get_xdata()) == [0, 1]]
        levels[label] = set(flat) - {2.0**-53, 2.0**-24}  # (less the unit roundoffs)
    assert levels == {
        "fp64, k = 32": {1e-13},
        "fp64, k = 128": {1e-11},
        "fp32, k = 32": {1e-13},
        "fp32, k = 128": {1e-11},
    }, levels


def test_levels_of_two_baselines_have_their_own_dash_in_panels_and_legend() -> None:
    """On a terms axis a baseline's level takes the hue's colour; SGEMM's and DGEMM's were
    both drawn with one dash, and their legend entries looked the same."""
    rows_ = [ozaki(64, 0, t, str(t), 10.0**-t) for t in (6, 8)]
    rows_ += [dgemm(64), row(64, 0, 3e-7, format="fp32", backend="numpy")]
    spec = PlotSpec(metrics=("err_max",), x="terms", hue="method", style="none")
    fig = draw_figure(prepare(table(rows_), spec, "err_max"), "err_max", spec, "")
    (ax,) = [a for a in fig.axes if a.get_visible()]
    dash = {  # (get_linestyle() says "--" for every dash pattern: the pattern itself)
        ln.get_ydata()[0]: ln._unscaled_dash_pattern
        for ln in ax.get_lines()
        if list(ln.get_xdata()) == [0, 1] and ln.get_ydata()[0] in (3e-15, 3e-6)
    }
    assert len(dash) == 2 and dash[3e-15] != dash[3e-6]
    legend = {
        t.get_text(): h._unscaled_dash_pattern
        for leg in (*fig.legends, *(lg for sub in fig.subfigs for lg in sub.legends))
        for h, t in zip(leg.legend_handles, leg.get_texts(), strict=True)
        if "(colour:" in t.get_text()
    }
    assert len(legend) == 2 and len(set(legend.values())) == 2, legend


def test_size_ticks_from_100000_on_name_their_value() -> None:
    """Labels of 100000 and more were written with one digit: k = 131072 read "1e+05", and
    150000 and 250000 both "2e+05"."""
    from precision.runner.plot_draw import _x_ticks

    assert _x_ticks([32768.0, 131072.0, 262144.0])[1] == [
        "$2^{15}$",
        "$2^{17}$",
        "$2^{18}$",
    ]
    assert _x_ticks([50000.0, 150000.0, 250000.0])[1] == ["50000", "1.5e+05", "2.5e+05"]
    assert _x_ticks([1000.0, 131073.0])[1] == ["1000", "131073"]
    assert _x_ticks([16.0, 64.0, 256.0])[1] == ["16", "64", "256"]  # (as before)
