"""The shipped configs against the real library: they validate, every point is a defined
GEMM, and the quickstart (CPU emulator) meets the issue's accuracy acceptance criterion."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from precision.runner.cli import main
from precision.runner.config import load_config, parse_config
from precision.runner.runner import run_experiment
from precision.runner.sweep import expand

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.toml"))


def test_the_four_issue_configs_are_shipped():
    names = {p.stem for p in CONFIGS}
    assert {"quickstart", "markidis_vs_ootomo", "h200_speed", "emulator_vs_gpu"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_shipped_config_points_are_all_defined(path):
    from precision.gemm import get_schedule
    from precision.gemm.api import CPU_BASELINES, OZAKI_METHODS, cublas_mode
    from precision.gemm.ozaki import make_plan

    cfg = load_config(path)
    assert cfg.name == path.stem
    points = expand(cfg)
    assert points
    for p in points:
        for backend in {p.backend, p.compare_backend} - {None}:
            if (p.method, p.format, backend) in CPU_BASELINES:
                continue  # no schedule: the fp32 FMA chain or numpy's matmul
            if p.method in OZAKI_METHODS:  # not schedules: a plan per (terms, target, k)
                if p.terms != "auto":
                    assert make_plan(p.method, p.format, str(p.target), int(p.terms), p.k)
                continue
            if backend == "cublas" and p.format == "fp64":
                continue  # native DGEMM: gemm.api.cublas_dgemm
            if backend == "cublas":
                cublas_mode(p.method, p.format, p.correction)
            else:
                get_schedule(p.method, p.format, p.correction)


def test_exact_and_fp64_references_agree_on_benign_inputs(tmp_path):
    text = """
name = "ref"
reference = "{ref}"
[sweep]
size = [48]
distribution = ["normal"]
method = ["plain", "corrected"]
format = ["fp16"]
"""
    tables = []
    for ref in ("exact", "fp64"):
        summary = run_experiment(
            parse_config(text.format(ref=ref)), tmp_path / ref, progress=False, plots=False
        )
        tables.append(pd.read_parquet(summary.results_dir / "results.parquet"))
    exact, fp64 = tables
    assert (exact["status"] == "ok").all() and (fp64["status"] == "ok").all()
    # the fp64 matmul is off by ~1e-16 relative: invisible next to errors >= 1e-8
    pd.testing.assert_series_equal(exact["err_fro"], fp64["err_fro"], rtol=1e-6)


@pytest.mark.slow
def test_quickstart_meets_the_accuracy_acceptance(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    config = next(p for p in CONFIGS if p.stem == "quickstart")
    assert main(["run", str(config), "--quiet"]) == 0
    # the README's first command says nothing is wrong with its own figures
    assert "warning" not in capsys.readouterr().err
    root = tmp_path / "results" / "quickstart"
    table = pd.read_parquet(root / "results.parquet")
    assert (table["status"] == "ok").all()
    assert (root / "figures" / "err_fro.png").stat().st_size > 10_000
    assert (root / "figures" / "err_fro.pdf").exists()
    assert (root / "config.toml").read_text() == config.read_text()

    uniform = table[(table["distribution"] == "uniform") & (table["format"] == "fp16")]
    per_size = uniform.groupby(["variant", "k"])["err_fro"].median().unstack("variant")
    assert per_size["plain"].between(1e-4, 1e-3).all(), per_size
    for variant in ("corrected-ootomo", "corrected-markidis"):
        assert (per_size[variant] * 100 <= per_size["plain"]).all(), per_size
