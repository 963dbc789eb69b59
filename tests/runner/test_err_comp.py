"""The runner's err_comp column: max |D − A·B| / (|A|·|B|) of each row's own inputs and
result (real GEMMs on the CPU emulator; no test double)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from precision.gemm import gemm
from precision.metrics import componentwise_error, error_metrics
from precision.reference import exact_matmul
from precision.runner.config import parse_config
from precision.runner.execute import InputCache
from precision.runner.runner import run_experiment
from precision.runner.sweep import expand

CONFIG = """\
name = "comp"
seed = 5
repeats = 2
reference = "{reference}"
[sweep]
size = [16, 24]
distribution = ["exp_rand"]
method = ["plain", "corrected"]
format = ["fp16"]
[distribution.exp_rand]
phi = 2.0
"""


@pytest.mark.parametrize("reference", ["exact", "exact_dd", "fp64"])
def test_err_comp_is_the_componentwise_error_of_each_row(tmp_path, reference):
    """A·B from the row's reference kind; |A|·|B| rounded once from its exact value (numpy's
    float64 matmul for reference = "fp64"). err_comp never exceeds err_max: |A|·|B| >= |A·B|."""
    config = parse_config(CONFIG.format(reference=reference), "comp.toml")
    summary = run_experiment(config, tmp_path, progress=False, plots=False)
    table = pd.read_parquet(summary.results_dir / "results.parquet")
    assert len(table) == 8 and table["err_comp"].notna().all()
    assert (table["err_comp"] <= table["err_max"]).all()
    cache = InputCache()
    for point in expand(config):
        for repeat in range(2):
            A, B = cache.get(point, repeat).A, cache.get(point, repeat).B
            D = gemm(A, B, method=point.method, fmt=point.format)
            if reference == "fp64":
                ref, lo = A.astype(np.float64) @ B.astype(np.float64), None
                absprod = np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)
            else:
                ref = exact_matmul(A, B)
                lo = exact_matmul(A, B, -ref) if reference == "exact_dd" else None
                absprod = exact_matmul(np.abs(A), np.abs(B))
            row = table[(table["point_id"] == point.id) & (table["repeat"] == repeat)]
            assert row["err_comp"].item() == componentwise_error(D, ref, absprod, lo)
            assert row["err_max"].item() == error_metrics(D, ref, lo)["err_max"]
