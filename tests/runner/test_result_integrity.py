"""Results are never silently wrong or incomplete: edge cases of resume, config changes,
provenance, validation and timing that a mutation audit of precision/runner found untested
(2026-11-27). Behaviour level: a one-point config run in tmp_path, its files checked, the
expected values derived here (counts, hand-made tables, math.fsum), not by the runner."""

from __future__ import annotations

import json

import doubles
import numpy as np
import pandas as pd
import pytest

from precision.runner.config import parse_config
from precision.runner.runner import run_experiment
from precision.runner.summary import summarize

ONE_POINT = """\
name = "t"
seed = 5
repeats = {repeats}
reference = "fp64"
[sweep]
size = [8]
distribution = ["uniform"]
method = ["plain"]
format = ["f16"]
[timing]
warmup = {warmup}
calls = {calls}
"""


@pytest.fixture(autouse=True)
def _doubles(monkeypatch):
    doubles.install(monkeypatch.setattr)


def _run(tmp_path, text, **kw):
    kw.setdefault("progress", False)
    kw.setdefault("plots", False)
    return run_experiment(parse_config(text, "cfg.toml"), tmp_path / "results", **kw)


def test_a_point_with_one_failed_repeat_is_recomputed_on_resume(tmp_path):
    text = ONE_POINT.format(repeats=2, warmup=0, calls=1)
    calls = []

    def second_call_fails(A, B, **kw):
        calls.append(1)
        if len(calls) == 2:  # repeat 1 of the only point (no warm-up, one timed call)
            raise RuntimeError("transient failure")
        return doubles.fake_gemm(A, B, **kw)

    first = _run(tmp_path, text, gemm=second_call_fails)
    assert first.errors == 1 and first.computed == 0
    second = _run(tmp_path, text, gemm=doubles.fake_gemm)
    assert second.skipped == 0 and second.computed == 1
    table = pd.read_parquet(second.results_dir / "results.parquet")
    assert sorted(table["repeat"]) == [0, 1]
    assert (table["status"] == "ok").all()


def test_each_repeat_makes_warmup_plus_calls_gemm_calls(tmp_path):
    calls = []

    def counting(A, B, **kw):
        calls.append(1)
        return doubles.fake_gemm(A, B, **kw)

    summary = _run(tmp_path, ONE_POINT.format(repeats=2, warmup=2, calls=3), gemm=counting)
    assert summary.computed == 1
    assert len(calls) == 2 * (2 + 3)  # repeats x (untimed warm-up + timed calls)
    table = pd.read_parquet(summary.results_dir / "results.parquet")
    assert (table["timed_calls"] == 3).all()


def test_provenance_records_the_git_commit(tmp_path, monkeypatch):
    """The commit a run used is in provenance.json (a key holding None would pass a test that
    only checks the key): PRECISION_GIT_COMMIT, as on a machine without the git history."""
    from precision import provenance
    from precision.runner import execute

    def forget() -> None:  # both are cached per process; the rows' copy too, or every later
        provenance.git_commit.cache_clear()  # test of this worker stored rows under the
        execute._provenance.cache_clear()  # audit commit (and warned that code differed)

    monkeypatch.setenv("PRECISION_GIT_COMMIT", "0123abcd-audit")
    forget()
    try:
        summary = _run(tmp_path, ONE_POINT.format(repeats=1, warmup=0, calls=1))
        prov = json.loads((summary.results_dir / "provenance.json").read_text())
        assert prov["latest"]["git_commit"] == "0123abcd-audit"
        assert prov["runs"][-1]["git_commit"] == "0123abcd-audit"
        table = pd.read_parquet(summary.results_dir / "results.parquet")
        assert (table["git_commit"] == "0123abcd-audit").all()
    finally:
        forget()


def test_summary_is_the_median_of_the_repeats_not_the_mean(tmp_path):
    # five repeats on random inputs: their mean and median differ
    summary = _run(tmp_path, ONE_POINT.format(repeats=5, warmup=0, calls=1))
    table = pd.read_parquet(summary.results_dir / "results.parquet")
    values = np.sort(table["err_fro"].to_numpy(float))
    assert len(values) == 5 and values[2] != values.mean()
    out = summarize(table, timing=False)
    assert len(out) == 1
    assert out["err_fro"].iloc[0] == values[2]  # middle of five, by hand


def test_a_changed_config_of_the_same_length_is_kept_and_replaced(tmp_path):
    old = ONE_POINT.format(repeats=2, warmup=0, calls=1)
    new = ONE_POINT.format(repeats=3, warmup=0, calls=1)
    assert len(old) == len(new) and old != new
    _run(tmp_path, old)
    summary = _run(tmp_path, new)
    root = summary.results_dir
    assert (root / "config.toml").read_text() == new
    kept = sorted(root.glob("config.*.toml"))
    assert len(kept) == 1 and kept[0].read_text() == old
    assert len(list(root.glob("results.*.parquet"))) == 1
    assert len(pd.read_parquet(root / "results.parquet")) == 3


def test_exact_reference_is_the_correctly_rounded_product(tmp_path):
    import math

    seen = []

    def correctly_rounded(A, B, **kw):
        # fp32 x fp32 products are exact in fp64; math.fsum rounds their sum once
        a, b = np.asarray(A, np.float64), np.asarray(B, np.float64)
        out = np.array(
            [[math.fsum(a[i] * b[:, j]) for j in range(b.shape[1])] for i in range(a.shape[0])]
        )
        seen.append(not np.array_equal(out, a @ b))
        return out

    text = (
        ONE_POINT.format(repeats=2, warmup=0, calls=1)
        .replace('reference = "fp64"', 'reference = "exact"')
        .replace("size = [8]", "size = [64]")
        .replace('format = ["f16"]', 'format = ["fp32"]')
    )
    summary = _run(tmp_path, text, gemm=correctly_rounded)
    table = pd.read_parquet(summary.results_dir / "results.parquet")
    assert any(seen)  # numpy's fp64 product differs from the correctly rounded one here
    assert (table["status"] == "ok").all()
    assert (table["err_fro"] == 0).all() and (table["err_max"] == 0).all()


@pytest.mark.parametrize(
    "key, line", [("repeats", "repeats = true"), ("[timing] calls", "calls = true")]
)
def test_a_boolean_where_an_integer_belongs_is_refused_and_nothing_is_written(
    tmp_path, monkeypatch, capsys, key, line
):
    from precision.runner.cli import main

    monkeypatch.chdir(tmp_path)
    text = ONE_POINT.format(repeats=2, warmup=0, calls=1)
    text = (
        text.replace("repeats = 2", line) if key == "repeats" else text.replace("calls = 1", line)
    )
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(text)
    assert main(["run", str(cfg), "--quiet", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert key in err and "integer" in err
    assert not (tmp_path / "results").exists()


def test_a_table_holding_one_repeat_twice_is_not_adopted(tmp_path):
    import shutil

    text = ONE_POINT.format(repeats=2, warmup=0, calls=1)
    first = _run(tmp_path, text)
    root = first.results_dir
    table = pd.read_parquet(root / "results.parquet")
    assert sorted(table["repeat"]) == [0, 1]
    # a table of the same point whose two rows are both repeat 0 (rows duplicated on merge)
    doubled = pd.concat([table[table["repeat"] == 0]] * 2, ignore_index=True)
    doubled.to_parquet(root / "results.parquet", index=False)
    shutil.rmtree(root / "points")  # published without points/
    second = _run(tmp_path, text)
    assert second.skipped == 0 and second.computed == 1
    again = pd.read_parquet(root / "results.parquet")
    assert sorted(again["repeat"]) == [0, 1]
