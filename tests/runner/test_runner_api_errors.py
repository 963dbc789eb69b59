"""The runner's Python API on arguments of the wrong type: a clear TypeError naming the
argument, instead of an AttributeError from deep inside (found by an audit of the API)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from precision.runner.config import parse_config
from precision.runner.figures import PlotSpec
from precision.runner.plotting import plot_results
from precision.runner.runner import run_experiment

CONFIG = """
name = "api"
[[sweep]]
size = [8]
distribution = ["uniform"]
method = ["plain"]
format = ["fp32"]
backend = ["numpy"]
"""


@pytest.mark.parametrize("config", ["cfg.toml", {"name": "x"}, None])
def test_run_experiment_wants_a_parsed_config(config, tmp_path):
    with pytest.raises(TypeError, match="run_experiment takes an ExperimentConfig"):
        run_experiment(config, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_run_experiment_checks_gemm_and_jobs(tmp_path):
    cfg = parse_config(CONFIG)
    with pytest.raises(TypeError, match="gemm must be a callable"):
        run_experiment(cfg, tmp_path, gemm=5, progress=False)  # every point failed on it
    with pytest.raises(TypeError, match="jobs must be an int >= 1 or None, got '2'"):
        run_experiment(cfg, tmp_path, jobs="2", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_parse_config_wants_the_text(tmp_path):
    with pytest.raises(TypeError, match="for a file use load_config"):
        parse_config(Path(tmp_path / "cfg.toml"))
    with pytest.raises(TypeError, match="takes the TOML text as a str, got dict"):
        parse_config({"name": "x"})


def test_plot_results_takes_a_str_folder(tmp_path):
    summary = run_experiment(parse_config(CONFIG), tmp_path, progress=False, plots=False)
    assert summary.computed == 1
    table = pd.read_parquet(tmp_path / "api" / "results.parquet")
    png = PlotSpec(formats=("png",))  # (the folder is what is checked: no pdf needed)
    written = plot_results(table, str(tmp_path / "figs"), spec=png)  # was: 'str' has no 'mkdir'
    assert written and all(Path(p).parent == tmp_path / "figs" for p in written)
