"""The ``inputs_sha256`` column: a fingerprint of each row's input matrices, so that two tables
(two machines, two code versions, a ``--force`` recomputation) can be checked for
bit-identical inputs; null where no inputs were made, and for rows of older tables."""

from __future__ import annotations

import hashlib
import json

import doubles
import numpy as np
import pandas as pd
import pytest

import precision.runner.execute as execute
from precision.distributions import make_inputs
from precision.runner.cli import main
from precision.runner.config import parse_config
from precision.runner.runner import run_experiment
from precision.runner.store import ResultsDir

# Non-square (m, n, k = 8, 12, 16), so that a hash of A and B in the wrong order or with the
# wrong shapes in the header would differ; two distributions, methods and formats.
CONFIG = """\
name = "h"
seed = 11
repeats = 3
reference = "fp64"
[sweep]
m = [8]
n = [12]
k = [16]
distribution = ["uniform", "exp_rand"]
method = ["plain", "corrected"]
format = ["fp16", "bf16"]
[distribution.exp_rand]
phi = 1.0
"""

#: The rows of one input pair: everything the inputs depend on, and the repeat.
INPUT_GROUP = ["m", "n", "k", "distribution", "dist_params", "input_dtype", "repeat"]


@pytest.fixture(autouse=True)
def _doubles(monkeypatch):
    doubles.install(monkeypatch.setattr)


def run(root, text: str = CONFIG, **kwargs) -> pd.DataFrame:
    kwargs.setdefault("progress", False)
    kwargs.setdefault("plots", False)
    summary = run_experiment(parse_config(text, "cfg.toml"), root, **kwargs)
    return pd.read_parquet(summary.results_dir / "results.parquet")


def expected_sha256(A: np.ndarray, B: np.ndarray) -> str:
    """The documented fingerprint, written out independently of the runner's code: SHA-256
    of the header line "<dtype> <rows>x<cols> <dtype> <rows>x<cols>\\n", then A's and B's
    bytes (C order, little-endian), first 16 hex digits."""
    (m, k), (k2, n) = A.shape, B.shape
    header = f"{A.dtype.name} {m}x{k} {B.dtype.name} {k2}x{n}\n".encode("ascii")
    le = lambda a: np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()  # noqa: E731
    return hashlib.sha256(header + le(A) + le(B)).hexdigest()[:16]


def inputs_of(row: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The row's inputs, drawn again from its ``input_seed`` and parameters."""
    return make_inputs(
        row["distribution"],
        int(row["m"]),
        int(row["n"]),
        int(row["k"]),
        np.random.default_rng(int(row["input_seed"])),
        dtype=np.dtype(row["input_dtype"]),
        **json.loads(row["dist_params"]),
    )


def by_row(table: pd.DataFrame) -> pd.Series:
    return table.set_index(["point_id", "repeat"])["inputs_sha256"].sort_index()


@pytest.mark.parametrize("input_dtype", ["float32", "float64"])
def test_column_equals_an_independent_hash_of_the_rows_inputs(tmp_path, input_dtype):
    text = CONFIG.replace(
        'reference = "fp64"', f'reference = "fp64"\ninput_dtype = "{input_dtype}"'
    )
    table = run(tmp_path, text)
    assert "inputs_sha256" in table and (table["status"] == "ok").all()
    for _, row in table.iterrows():
        A, B = inputs_of(row)
        assert A.dtype == np.dtype(input_dtype) and A.shape == (8, 16) and B.shape == (16, 12)
        assert row["inputs_sha256"] == expected_sha256(A, B)
        assert len(row["inputs_sha256"]) == 16 and int(row["inputs_sha256"], 16) >= 0


def test_column_hashes_exactly_the_arrays_the_gemm_receives(tmp_path):
    seen: dict[str, int] = {}

    def spy(A, B, **kw):
        digest = expected_sha256(A, B)
        seen[digest] = seen.get(digest, 0) + 1
        return doubles.fake_gemm(A, B, **kw)

    table = run(tmp_path, gemm=spy)
    # every row's hash is that of a pair the gemm received, and every pair received has rows
    assert set(table["inputs_sha256"]) == set(seen)


def test_a_gemm_that_writes_into_its_inputs_cannot_change_those_of_later_points(tmp_path):
    """The inputs of a repeat are drawn and hashed once and shared by its points: a GEMM
    that rounds them in place (corrected here, computed before plain) fails with status
    error instead of handing the later points other inputs under the same fingerprint."""
    from precision.formats import round as fround

    seen: dict[tuple, set[str]] = {}

    def rounds_in_place(A, B, **kw):
        seen.setdefault((kw["method"], kw["fmt"]), set()).add(expected_sha256(A, B))
        if kw["method"] == "corrected":
            A[...] = fround(np.asarray(A, dtype=np.float64), kw["fmt"])
        return doubles.fake_gemm(A, B, **kw)

    table = run(tmp_path, gemm=rounds_in_place)
    corrected = table["method"] == "corrected"
    assert (table.loc[corrected, "status"] == "error").all()
    assert table.loc[corrected, "error"].str.contains("read-only").all()
    plain = table[~corrected]
    assert (plain["status"] == "ok").all() and len(plain) == 2 * 2 * 3
    for _, row in table.iterrows():  # every row's hash is that of its own, unchanged inputs
        assert row["inputs_sha256"] == expected_sha256(*inputs_of(row))
    for fmt in ("fp16", "bf16"):
        assert seen[("plain", fmt)] == set(plain.loc[plain["format"] == fmt, "inputs_sha256"])


def test_two_runs_and_a_forced_recomputation_give_identical_hashes(tmp_path):
    first = run(tmp_path / "a")
    second = run(tmp_path / "b")
    pd.testing.assert_series_equal(by_row(first), by_row(second))
    forced = run(tmp_path / "a", force=True)  # every point computed again
    pd.testing.assert_series_equal(by_row(first), by_row(forced))
    other_seed = run(tmp_path / "c", CONFIG.replace("seed = 11", "seed = 12"))
    assert not set(other_seed["inputs_sha256"]) & set(first["inputs_sha256"])


def test_methods_on_the_same_inputs_share_a_hash_and_repeats_differ(tmp_path):
    table = run(tmp_path)
    per_pair = table.groupby(INPUT_GROUP)["inputs_sha256"].nunique()
    assert (per_pair == 1).all()  # plain/corrected x fp16/bf16 of one repeat: one hash
    assert len(per_pair) == 2 * 3  # two distributions x three repeats ...
    assert table["inputs_sha256"].nunique() == 2 * 3  # ... each with its own inputs
    repeats = table.groupby(["point_id"])["inputs_sha256"].nunique()
    assert (repeats == 3).all()


def test_hashed_once_per_input_pair(tmp_path, monkeypatch):
    calls = []
    original = execute.inputs_sha256

    def counted(A, B):
        calls.append(1)
        return original(A, B)

    monkeypatch.setattr(execute, "inputs_sha256", counted)
    table = run(tmp_path)
    assert len(table) == 2 * 2 * 2 * 3  # 8 points x 3 repeats ...
    assert len(calls) == 2 * 3  # ... on 6 input pairs, each hashed once


def test_no_inputs_no_hash(tmp_path, monkeypatch):
    """Rows of points not computed (backend unavailable: no inputs drawn) hold null, as
    ``gpu_uuid`` does; a point whose gemm raised after its inputs were drawn keeps the hash;
    a failure while drawing the inputs leaves it null."""
    text = CONFIG.replace('format = ["fp16", "bf16"]', 'format = ["fp16", "tf32"]').replace(
        'method = ["plain", "corrected"]',
        'method = ["plain", "satf"]\nbackend = ["emulator", "cuda"]',
    )
    table = run(tmp_path, text)
    unavailable = table["status"] == "unavailable"
    failed = table["status"] == "error"  # satf on tf32 raises in the double
    assert unavailable.any() and failed.any() and (table["backend"] == "cuda")[unavailable].all()
    assert table.loc[unavailable, "inputs_sha256"].isna().all()
    assert table.loc[unavailable, "gpu_uuid"].isna().all()
    assert table.loc[~unavailable, "inputs_sha256"].notna().all()
    for _, row in table[failed].iterrows():
        assert row["inputs_sha256"] == expected_sha256(*inputs_of(row))

    def broken(*args, **kwargs):
        raise ValueError("no inputs today")

    monkeypatch.setattr("precision.distributions.make_inputs", broken)
    table = run(tmp_path / "broken")
    assert (table["status"] == "error").all() and table["inputs_sha256"].isna().all()


def test_fingerprint_covers_dtype_shape_and_order_not_memory_layout():
    rng = np.random.default_rng(0)
    A, B = rng.random((4, 6)), rng.random((6, 4))
    digest = execute.inputs_sha256(A, B)
    assert digest == expected_sha256(A, B)
    assert execute.inputs_sha256(B, A) != digest  # order: A then B
    assert execute.inputs_sha256(A.reshape(6, 4), B.reshape(4, 6)) != digest  # same bytes
    assert execute.inputs_sha256(A.view(np.int64), B.view(np.int64)) != digest  # same bytes
    # a strided view or big-endian copy of the same values hashes like the plain arrays
    wide = np.zeros((4, 12))
    wide[:, ::2] = A
    assert execute.inputs_sha256(wide[:, ::2], B) == digest
    assert execute.inputs_sha256(A.astype(">f8"), B.astype(">f8")) == digest


def _as_old_version(path) -> None:
    """Rewrite a parquet file as written before the column existed."""
    rows = pd.read_parquet(path)
    rows.drop(columns=["inputs_sha256"]).to_parquet(path, index=False)


def test_old_table_without_the_column_resumes_adopts_and_plots(tmp_path, monkeypatch):
    """A table (and point files) from before the column: resumed and adopted without
    recomputation, its rows null in the column; new points get hashes; --force fills it in;
    ``precision plot`` draws the old table."""
    import shutil

    old_config = CONFIG.replace('format = ["fp16", "bf16"]', 'format = ["fp16"]')
    old = run(tmp_path, old_config)
    rd = ResultsDir(tmp_path, "h")
    points = sorted(rd.points_dir.glob("*.parquet"))
    for path in [rd.table_path, *points]:
        _as_old_version(path)
    points[0].unlink()  # its rows survive in the table only: adopted from it
    old = old.drop(columns=["inputs_sha256"])

    table = run(tmp_path, CONFIG)  # adds the bf16 points
    was_old = table["point_id"].isin(old["point_id"])
    assert was_old.sum() == len(old) and (~was_old).sum() == len(old)
    assert table.loc[was_old, "inputs_sha256"].isna().all()  # kept, not recomputed ...
    merged = table[was_old].merge(old, on=["point_id", "repeat"], suffixes=("", "_old"))
    assert (merged["created_utc"] == merged["created_utc_old"]).all()
    assert (merged["err_fro"] == merged["err_fro_old"]).all()
    new = table[~was_old]  # ... and the new points carry the hash of the same inputs
    assert new["inputs_sha256"].notna().all()
    assert new.groupby(INPUT_GROUP)["inputs_sha256"].nunique().eq(1).all()

    # `precision plot` on the old table as it was, then a --force run fills in the column
    shutil.rmtree(rd.points_dir)
    old.to_parquet(rd.table_path, index=False)
    monkeypatch.chdir(tmp_path)
    assert main(["plot", str(rd.path), "--format", "png", "--metric", "err_fro"]) == 0
    assert (rd.figures_dir / "err_fro.png").stat().st_size > 1000
    forced = run(tmp_path, CONFIG, force=True)
    assert forced["inputs_sha256"].notna().all()
    pd.testing.assert_series_equal(by_row(forced[~forced["point_id"].isin(old["point_id"])]),
                                   by_row(new))  # fmt: skip
