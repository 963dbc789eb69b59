"""Runner mechanics on a fast gemm double: files, resume, force, seeds, statuses, executors."""

from __future__ import annotations

import json

import doubles
import numpy as np
import pandas as pd
import pytest

from precision.runner.config import parse_config
from precision.runner.runner import RunnerError, run_experiment
from precision.runner.sweep import expand

ERROR_COLUMNS = ["err_fro", "err_max", "err_median"]
REQUIRED_COLUMNS = [
    "name",
    "m",
    "n",
    "k",
    "distribution",
    "method",
    "format",
    "backend",
    "arch",
    "repeat",
    "seed",
    "err_fro",
    "err_max",
    "err_median",
    "time_s",
    "tflops",
    "status",
    "error",
    "version",
    "git_commit",
    "source_digest",
    "host",
    "gpu",
    "created_utc",
]

CONFIG = """\
name = "t"
seed = 3
repeats = 2
reference = "fp64"
[sweep]
size = [16, 32]
distribution = ["uniform", "exp_rand"]
method = ["plain", "corrected"]
format = ["f16", "bf16"]
[distribution.exp_rand]
phi = 1.0
"""


@pytest.fixture(autouse=True)
def _doubles(monkeypatch):
    doubles.install(monkeypatch.setattr)


def config(text: str = CONFIG, path="cfg.toml"):
    return parse_config(text, path)


def run(tmp_path, text: str = CONFIG, **kwargs):
    kwargs.setdefault("progress", False)
    kwargs.setdefault("plots", False)
    if kwargs.get("jobs", 1) > 1 and kwargs.get("executor", "local") == "local":
        # named, not only patched in: --jobs workers are fresh processes (spawned)
        kwargs.setdefault("gemm", doubles.fake_gemm)
    summary = run_experiment(config(text), tmp_path / "results", **kwargs)
    return summary, pd.read_parquet(summary.results_dir / "results.parquet")


def sort(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values(["point_id", "repeat"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory):
    """``run`` of CONFIG, once for the tests that only read its summary, table and files
    (none writes there): (summary, table, the directory ``run`` was given)."""
    root = tmp_path_factory.mktemp("plain_run")
    with pytest.MonkeyPatch.context() as mp:
        doubles.install(mp.setattr)
        summary, table = run(root)
    return summary, table, root


def test_results_layout_and_columns(plain_run):
    summary, table, tmp_path = plain_run
    points = expand(config())
    assert len(points) == 2 * 2 * 2 * 2
    assert len(table) == len(points) * 2
    assert summary.computed == len(points) and summary.skipped == 0
    assert not [c for c in REQUIRED_COLUMNS if c not in table.columns]
    assert (table["status"] == "ok").all()
    assert (table["name"] == "t").all()
    root = tmp_path / "results" / "t"
    assert (root / "config.toml").read_text() == CONFIG
    assert len(list((root / "points").glob("*.parquet"))) == len(points)
    assert not list(root.rglob("*.tmp"))
    # parsed by Python's float(): pandas 3.0's default parser is off in the last bits
    csv = pd.read_csv(root / "results.csv", dtype={"err_fro": str})
    written = np.array([float(v) for v in csv["err_fro"]])
    np.testing.assert_array_equal(written, table["err_fro"])  # written exactly
    prov = json.loads((root / "provenance.json").read_text())
    assert prov["latest"]["seed"] == 3 and len(prov["runs"]) == 1
    assert {"version", "git_commit", "host", "created_utc", "blas"} <= set(prov["latest"])
    assert table["blas"].notna().all() and prov["latest"]["blas"] == table["blas"].iloc[0]
    assert set(prov["latest"]["libraries"]) >= {"pandas", "pyarrow", "matplotlib", "seaborn"}


def test_errors_and_timing_are_consistent(plain_run):
    _, table, _ = plain_run
    plain = table[table["method"] == "plain"]
    corrected = table[table["method"] == "corrected"]
    # fp16 inputs carry 11 bits: plain errors ~ 2^-12, the split recovers ~fp32 accuracy.
    assert plain["err_fro"].between(1e-5, 1e-2).all()
    assert (corrected["err_fro"] < 1e-5).all()
    assert (table["err_max"] >= table["err_median"]).all()
    assert (table["time_s"] > 0).all() and (table["time_min_s"] <= table["time_s"]).all()
    flops = 2.0 * table["m"] * table["n"] * table["k"]
    np.testing.assert_allclose(table["tflops"], flops / table["time_s"] / 1e12, rtol=1e-12)


def test_error_columns_match_an_independent_computation(plain_run):
    _, table, _ = plain_run
    row = table[(table["method"] == "plain") & (table["format"] == "fp16")].iloc[0]
    point = next(p for p in expand(config()) if p.id == row["point_id"])
    from precision.distributions import make_inputs

    A, B = make_inputs(
        row["distribution"],
        row["m"],
        row["n"],
        row["k"],
        np.random.default_rng(int(row["input_seed"])),
        **json.loads(row["dist_params"]),
    )
    ref = A.astype(np.float64) @ B.astype(np.float64)
    out = doubles.fake_gemm(A, B, method="plain", fmt="fp16").astype(np.float64)
    expected = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    assert point.input_seed(int(row["repeat"])) == row["input_seed"]
    assert row["err_fro"] == pytest.approx(expected, rel=1e-12)


def test_same_seed_same_errors_other_seed_different(tmp_path, plain_run):
    _, first, _ = plain_run
    _, second = run(tmp_path / "b")
    pd.testing.assert_frame_equal(sort(first)[ERROR_COLUMNS], sort(second)[ERROR_COLUMNS])
    _, other = run(tmp_path / "c", CONFIG.replace("seed = 3", "seed = 4"))
    assert not np.allclose(first["err_fro"].sort_values(), other["err_fro"].sort_values())


def test_every_method_and_format_sees_the_same_inputs(tmp_path, monkeypatch):
    seen: dict[tuple, set[bytes]] = {}

    def spy(A, B, **kw):
        seen.setdefault((A.shape, B.shape), set()).add(A.tobytes() + B.tobytes())
        return doubles.fake_gemm(A, B, **kw)

    text = CONFIG.replace('["uniform", "exp_rand"]', '["uniform"]').replace(
        "repeats = 2", "repeats = 1"
    )
    run(tmp_path, text, gemm=spy)
    # one input pair per size, shared by plain/corrected x fp16/bf16
    assert {key: len(v) for key, v in seen.items()} == {
        ((16, 16), (16, 16)): 1,
        ((32, 32), (32, 32)): 1,
    }


def test_rerun_skips_done_points_and_force_recomputes(tmp_path):
    calls = []

    def counting(A, B, **kw):
        calls.append(kw)
        return doubles.fake_gemm(A, B, **kw)

    summary, first = run(tmp_path, gemm=counting)
    n_calls = len(calls)
    assert n_calls == len(first)
    files = {p: p.stat().st_mtime_ns for p in summary.results_dir.glob("points/*")}
    summary, again = run(tmp_path, gemm=counting)
    assert len(calls) == n_calls and summary.computed == 0 and summary.skipped == 16
    assert files == {p: p.stat().st_mtime_ns for p in summary.results_dir.glob("points/*")}
    pd.testing.assert_frame_equal(first, again)
    summary, forced = run(tmp_path, gemm=counting, force=True)
    assert len(calls) == 2 * n_calls and summary.computed == 16
    pd.testing.assert_frame_equal(sort(first)[ERROR_COLUMNS], sort(forced)[ERROR_COLUMNS])


def test_extending_a_sweep_computes_only_new_points(tmp_path):
    calls = []

    def counting(A, B, **kw):
        calls.append(kw)
        return doubles.fake_gemm(A, B, **kw)

    run(tmp_path, gemm=counting)
    n_calls = len(calls)
    summary, table = run(
        tmp_path, CONFIG.replace("size = [16, 32]", "size = [16, 32, 8]"), gemm=counting
    )
    assert summary.computed == 8 and summary.skipped == 16
    assert len(calls) - n_calls == 8 * 2
    assert sorted(table["k"].unique()) == [8, 16, 32]
    saved = list((tmp_path / "results" / "t").glob("config.*.toml"))
    assert len(saved) == 1 and saved[0].read_text() == CONFIG


def test_unavailable_backend_and_failing_point_are_rows_not_crashes(tmp_path):
    text = CONFIG.replace(
        'format = ["f16", "bf16"]', 'format = ["f16", "tf32"]\nbackend = ["emulator", "cuda"]'
    ).replace('method = ["plain", "corrected"]', 'method = ["plain", "satf"]')
    summary, table = run(tmp_path, text)
    cuda = table[table["backend"] == "cuda"]
    assert (cuda["status"] == "unavailable").all()
    assert cuda["error"].str.contains("no GPU").all() and cuda["err_fro"].isna().all()
    bad = table[
        (table["backend"] == "emulator") & (table["method"] == "satf") & (table["format"] == "tf32")
    ]
    assert (bad["status"] == "error").all()
    assert bad["error"].str.startswith("NotImplementedError").all()
    good = table[(table["backend"] == "emulator") & (table["status"] == "ok")]
    assert len(good) == len(table[table["backend"] == "emulator"]) - len(bad)
    assert summary.failed
    assert summary.status_counts["unavailable"] == len(cuda) // 2
    # unavailable points are reported as such, not as computed
    assert summary.unavailable == len(cuda) // 2 and summary.errors == len(bad) // 2
    assert summary.computed == len(good) // 2
    # failed / unavailable points are retried by the next run; good ones are not
    summary, _ = run(tmp_path, text)
    assert summary.skipped == len(good) // 2
    assert (summary.computed, summary.unavailable, summary.errors) == (
        0,
        len(cuda) // 2,
        len(bad) // 2,
    )


def test_compare_backend_records_identical_bits(tmp_path, monkeypatch):
    import precision.runner.execute

    monkeypatch.setattr(
        precision.runner.execute, "_availability", lambda: dict.fromkeys(doubles.BACKENDS)
    )
    text = CONFIG.replace("seed = 3", 'seed = 3\ncompare_backend = "emulator"').replace(
        'format = ["f16", "bf16"]', 'format = ["f16", "bf16"]\nbackend = ["cuda"]'
    )
    flipped = [(0, 0), (0, 1), (3, 2)]  # elements whose last bit the compare backend flips

    def gemm_differing_on_the_emulator(A, B, **kwargs):
        out = np.array(doubles.fake_gemm(A, B, **kwargs), dtype=np.float32)
        if kwargs["backend"] == "emulator":
            bits = out.view(np.uint32)
            for i, j in flipped:
                bits[i, j] ^= np.uint32(1)
        return out

    monkeypatch.setattr(
        precision.runner.execute, "_default_gemm", lambda: gemm_differing_on_the_emulator
    )
    _, table = run(tmp_path, text)
    assert (table["status"] == "ok").all() and (table["backend"] == "cuda").all()
    assert set(table["m"]) == {16, 32} and (table["m"] == table["n"]).all()
    # the "cuda" result and the "emulator" one differ in exactly len(flipped) of m·n elements
    want = (table["m"] * table["n"] - len(flipped)) / (table["m"] * table["n"])
    np.testing.assert_array_equal(table["identical_bits"], want)
    assert (table["timing"] == "wall").all()
    assert (table["calls_per_sample"] == 1).all()  # wall timing: one call per sample


def test_figures_are_written(tmp_path):
    summary, _ = run(tmp_path, plots=True)
    names = sorted(p.name for p in summary.figures)
    figures = ["err_fro.pdf", "err_fro.png", "tflops.pdf", "tflops.png"]
    assert names == sorted(figures + ["summary.csv", "summary.md", "summary.tex"])
    for path in summary.figures:
        assert path.stat().st_size > 1000


def test_dask_executor_matches_local(tmp_path, one_dask_cluster_at_a_time):
    pytest.importorskip("dask.distributed")
    _, local = run(tmp_path / "local")
    summary, dask = run(tmp_path / "dask", executor="dask", jobs=2, dask_processes=False)
    assert summary.computed == 16
    pd.testing.assert_frame_equal(sort(local)[ERROR_COLUMNS], sort(dask)[ERROR_COLUMNS])
    summary, _ = run(tmp_path / "dask", executor="dask", jobs=2, dask_processes=False)
    assert summary.computed == 0 and summary.skipped == 16


def test_dask_missing_is_a_clear_error(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name.startswith("dask"):
            raise ImportError("No module named 'dask'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    with pytest.raises(RunnerError, match=r"precision\[dask\]"):
        run(tmp_path, executor="dask")
    assert not (tmp_path / "results").exists()


def test_local_process_pool_matches_serial(tmp_path):
    _, serial = run(tmp_path / "serial")
    summary, pooled = run(tmp_path / "pool", jobs=2)
    assert summary.computed == 16
    pd.testing.assert_frame_equal(sort(serial)[ERROR_COLUMNS], sort(pooled)[ERROR_COLUMNS])


def test_pool_workers_share_the_cores_among_the_busy_ones(tmp_path, monkeypatch):
    """Workers of `--jobs 2` run the emulator on every core while one of them computes, and
    on half of them while both do: each used to take a thread per core whatever the others
    did. (The pool is handed this machine's cores: under pytest-xdist this process itself
    runs on its share.)"""
    import os

    from precision.runner import runner
    from precision.runner.runner import _process_pool

    cores = len(os.sched_getaffinity(0))
    if cores < 2:
        pytest.skip("one core: every share is one thread")
    monkeypatch.setattr(runner, "thread_count", lambda: cores)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # (the workers inherit it)
    with _process_pool(2) as (submit, _):
        futures = [submit(doubles.threads_alone_then_together, str(tmp_path)) for _ in range(2)]
        seen = [future.result() for future in futures]
    assert sorted(seen, key=str) == sorted([(cores, cores // 2), (None, cores // 2)], key=str)


def test_exact_dd_reference_of_an_overflowing_product_has_no_low_part():
    """A·B beyond float64's range: hi = ±Inf as for "exact", lo = 0 there (it used to raise
    "C contains Inf or NaN", so the point became an error instead of reporting the NaN/Inf)."""
    from precision.runner.execute import reference_product

    A = np.array([[1e308, 1e308], [1.0, 2.0]])
    B = np.array([[10.0, 1.0], [10.0, 2.0**-60]])
    hi, lo = reference_product(A, B, "exact_dd")
    assert np.array_equal(hi, reference_product(A, B, "exact"))
    assert hi[0, 0] == np.inf and lo[0, 0] == 0.0
    # a finite entry keeps its exact low part: 1·1 + 2·2^-60 = 1 + 2^-59, hi 1, lo 2^-59
    assert (hi[1, 1], lo[1, 1]) == (1.0, 2.0**-59)
