"""The Ozaki axes in the runner: terms/target validation, point identity, a tiny emulator sweep
end to end (errors checked against exact rational arithmetic), the figure."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from precision.runner.config import ConfigError, parse_config
from precision.runner.runner import run_experiment
from precision.runner.sweep import expand

BLOCK = """\
name = "oz"
seed = 1
repeats = 1
reference = "exact_dd"
input_dtype = "float64"
[[sweep]]
m = [12]
n = [10]
k = [24]
distribution = ["exp_rand"]
method = ["ozaki2"]
format = ["int8"]
target = ["fp64"]
terms = [8, "auto"]
[[sweep]]
m = [12]
n = [10]
k = [24]
distribution = ["exp_rand"]
method = ["ozaki1"]
format = ["int8"]
target = ["fp64", "fp32"]
terms = [3]
[[sweep]]
m = [12]
n = [10]
k = [24]
distribution = ["exp_rand"]
method = ["plain"]
format = ["fp64"]
backend = ["numpy"]
[distribution.exp_rand]
phi = [0.0, 2.0]
[plot]
metric = ["err_max", "err_median"]
x = "terms"
hue = "phi"
style = "none"
col = "method"
format = ["png"]
"""


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "cfg.toml")
    message = str(info.value)
    assert "cfg.toml" in message
    return message


def _one_block(extra: str, method: str = "ozaki2", fmt: str = "int8", backend="emulator") -> str:
    return (
        f'name = "x"\n[sweep]\nsize = [16]\ndistribution = ["normal"]\nmethod = ["{method}"]\n'
        f'format = ["{fmt}"]\nbackend = ["{backend}"]\n{extra}'
    )


def test_terms_and_target_are_validated():
    msg = error_of(_one_block("terms = [4]\n", method="plain", fmt="fp16"))
    assert "[sweep] terms" in msg and "ozaki1, ozaki2 only" in msg and "'plain'" in msg
    msg = error_of(_one_block('target = ["fp64"]\n', method="plain", fmt="fp16"))
    assert "[sweep] target" in msg
    msg = error_of(_one_block("terms = [21]\n"))
    assert "[sweep] terms" in msg and "[2, 20]" in msg and "got 21" in msg
    msg = error_of(_one_block("terms = [9]\n", method="ozaki1"))
    assert "[1, 8]" in msg and "got 9" in msg
    for bad, got in (('"many"', "str 'many'"), ("0", "int 0"), ("true", "bool True")):
        msg = error_of(_one_block(f"terms = [{bad}]\n"))
        assert 'a positive integer or "auto"' in msg and got in msg
    msg = error_of(_one_block('target = ["fp16"]\n'))
    assert "[sweep] target" in msg and "unknown target 'fp16'" in msg and "fp64, fp32" in msg
    assert "does not support format 'fp16'" in error_of(_one_block("", fmt="fp16"))
    assert "does not support format 'fp16'" in error_of(_one_block("", "ozaki2", "fp16", "cuda"))
    msg = error_of('input_dtype = "float16"\n' + _one_block(""))
    assert "input_dtype" in msg and "float16" in msg and "float32, float64" in msg


def test_points_carry_terms_and_target_in_their_identity():
    cfg = parse_config(BLOCK, "cfg.toml")
    points = expand(cfg)
    oz = [p for p in points if p.method.startswith("ozaki")]
    # 2 phi x (ozaki2: 2 terms x 1 target + ozaki1: 1 term x 2 targets)
    assert len(oz) == 2 * (2 + 2) and len({p.id for p in oz}) == len(oz)
    assert {(p.terms, p.target) for p in oz if p.method == "ozaki2"} == {
        (8, "fp64"),
        ("auto", "fp64"),
    }
    base = [p for p in points if p.method == "plain"]
    assert all(p.terms is None and p.target is None for p in base)
    assert {"terms", "target"}.isdisjoint(base[0].params())
    plain = parse_config(_one_block("", "plain", "fp16"), "c.toml")
    assert "input_dtype" not in expand(plain)[0].params()  # float32 default: ids unchanged


def _exact(A: np.ndarray, B: np.ndarray, i: int, j: int) -> Fraction:
    terms = zip(A[i], B[:, j], strict=True)
    return sum((Fraction(float(a)) * Fraction(float(b)) for a, b in terms), Fraction(0))


def test_tiny_ozaki_sweep_end_to_end(tmp_path):
    from precision.distributions import make_inputs
    from precision.gemm import gemm
    from precision.gemm.ozaki import plan_for
    from precision.runner.sweep import rng_for

    cfg = parse_config(BLOCK, "cfg.toml")
    summary = run_experiment(cfg, tmp_path / "results", progress=False, plots=True)
    table = pd.read_parquet(summary.results_dir / "results.parquet")
    assert (table["status"] == "ok").all(), table[["method", "error"]]
    assert len(table) == len(expand(cfg)) == 10
    figures = summary.results_dir / "figures"
    for metric in ("err_max", "err_median"):
        png = figures / f"{metric}.png"
        assert png.stat().st_size > 10_000
    summary_csv = pd.read_csv(figures / "summary.csv")
    assert len(summary_csv) == len(table)  # terms/target keep the points apart
    assert (summary_csv["repeats"] == 1).all()
    for p in expand(cfg):
        row = table[table["point_id"] == p.id].iloc[0]
        A, B = make_inputs(p.distribution, p.m, p.n, p.k, rng_for(p, 0), dtype=np.float64,
                           **dict(p.dist_params))  # fmt: skip
        assert row["input_dtype"] == "float64"
        if p.method == "plain":
            assert np.isnan(row["terms"]) and pd.isna(row["target"])
            D = A @ B
        else:
            assert row["target"] == p.target and row["terms_requested"] == str(p.terms)
            plan, _, _ = plan_for(A, B, method=p.method, fmt=p.format, target=p.target,
                                  terms=p.terms)  # fmt: skip
            assert row["terms"] == plan.terms
            D = gemm(A, B, method=p.method, fmt=p.format, target=p.target, terms=p.terms)
            assert D.dtype == (np.float64 if p.target == "fp64" else np.float32)
        # Elementwise relative errors in exact rational arithmetic.
        rel = []
        for i in range(p.m):
            for j in range(p.n):
                ex = _exact(A, B, i, j)
                rel.append(abs(Fraction(float(D[i, j])) - ex) / abs(ex))
        rel.sort()
        err_max = float(rel[-1])
        err_median = float((rel[len(rel) // 2 - 1] + rel[len(rel) // 2]) / 2)
        assert row["err_max"] == pytest.approx(err_max, rel=1e-9, abs=0)
        assert row["err_median"] == pytest.approx(err_median, rel=1e-9, abs=0)
    # A correctly rounded fp64 result has errors below 2^-53 that the double-double
    # reference resolves (an fp64-rounded reference would read 0).
    phi0 = table["dist_params"].str.contains('"phi": 0.0')
    best = table[(table["method"] == "ozaki2") & (table["terms"] >= 14) & phi0]
    assert len(best) == 1
    assert (best["err_median"] > 0).all() and (best["err_max"] <= 2.0**-53).all()
    # Resume: the terms/target points are recognised as done.
    again = run_experiment(cfg, tmp_path / "results", progress=False, plots=False)
    assert again.computed == 0


def test_error_metrics_use_the_low_part_exactly():
    from precision.metrics import error_metrics

    hi = np.array([[1.0, -3.0]])
    lo = np.array([[2.0**-60, 0.0]])
    approx = np.array([[1.0, -3.0 + 2.0**-51]])
    m = error_metrics(approx, hi, lo)
    assert m["err_max"] == 2.0**-51 / 3.0
    assert error_metrics(approx[:, :1], hi[:, :1], lo[:, :1])["err_max"] == 2.0**-60
