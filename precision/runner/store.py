"""The on-disk layout of one experiment's results, and atomic writes into it.

::

    results/<name>/
        config.toml          the config, copied verbatim (rerun it to reproduce the table)
        provenance.json      package version, git commit, host, GPU, ... of each run
        points/<slug>-<id>.parquet   one file per completed sweep point (resume unit)
        results.parquet, results.csv  every point of the current config, combined
        figures/*.png, *.pdf

Every file is written to a temporary name in the same directory and renamed into place, so
an interrupted run never leaves a half-written file under its final name.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from precision.runner.config import ExperimentConfig
from precision.runner.execute import STATUS_OK
from precision.runner.sweep import Point


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file next to ``path``, then rename it to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ResultsDir:
    """Paths and file operations of ``<root>/<name>/``."""

    def __init__(self, root: Path | str, name: str):
        self.path = Path(root) / name

    @property
    def config_path(self) -> Path:
        return self.path / "config.toml"

    @property
    def provenance_path(self) -> Path:
        return self.path / "provenance.json"

    @property
    def points_dir(self) -> Path:
        return self.path / "points"

    @property
    def figures_dir(self) -> Path:
        return self.path / "figures"

    @property
    def table_path(self) -> Path:
        return self.path / "results.parquet"

    def point_path(self, point: Point) -> Path:
        """The result file of ``point``."""
        return self.points_dir / f"{point.slug}-{point.id}.parquet"

    def write_point(self, point: Point, rows: pd.DataFrame) -> None:
        """Store ``point``'s rows atomically."""
        atomic_write(self.point_path(point), lambda tmp: rows.to_parquet(tmp, index=False))

    def read_point(self, point: Point) -> pd.DataFrame | None:
        """``point``'s stored rows, or None if absent or unreadable."""
        path = self.point_path(point)
        if not path.exists():
            return None
        try:
            return pd.read_parquet(path)
        except Exception:  # a foreign or damaged file: treat as not done
            return None

    def is_done(self, point: Point) -> bool:
        """True if ``point`` has a stored result with every repeat computed successfully.

        Points stored as unavailable or failed are retried by the next run (for example on
        a machine with a GPU).
        """
        rows = self.read_point(point)
        return (
            rows is not None
            and len(rows) == point.repeats
            and bool((rows["status"] == STATUS_OK).all())
        )

    def save_config(self, config: ExperimentConfig) -> None:
        """Copy the config file verbatim; keep a previous, different one under a dated name."""
        dest = self.config_path
        if dest.exists():
            if dest.read_text(encoding="utf-8") == config.text:
                return
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            os.replace(dest, dest.with_name(f"config.{stamp}.toml"))
        atomic_write(dest, lambda tmp: tmp.write_text(config.text, encoding="utf-8"))

    def save_provenance(self, info: dict) -> None:
        """Write ``provenance.json``: this run's record, after those of earlier runs."""
        runs = []
        if self.provenance_path.exists():
            try:
                runs = json.loads(self.provenance_path.read_text())["runs"]
            except (ValueError, KeyError, TypeError):
                runs = []
        doc = {"latest": info, "runs": [*runs, info]}
        text = json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n"
        atomic_write(self.provenance_path, lambda tmp: tmp.write_text(text))

    def combine(self, points: list[Point], labels: dict[str, str]) -> pd.DataFrame:
        """Concatenate the stored rows of ``points`` (absent ones skipped) in sweep order."""
        frames = []
        for point in points:
            rows = self.read_point(point)
            if rows is not None:
                frames.append(rows.assign(dist_label=labels.get(point.id, point.distribution)))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def write_table(self, table: pd.DataFrame, name: str) -> None:
        """Write the combined ``results.parquet`` and ``results.csv`` (name column first)."""
        table = table.assign(name=name)
        table = table[["name", *[c for c in table.columns if c != "name"]]]
        atomic_write(self.table_path, lambda tmp: table.to_parquet(tmp, index=False))
        atomic_write(
            self.table_path.with_suffix(".csv"), lambda tmp: table.to_csv(tmp, index=False)
        )

    def read_table(self) -> pd.DataFrame:
        """The combined results table (``FileNotFoundError`` naming the path if absent)."""
        if not self.table_path.exists():
            raise FileNotFoundError(f"no results table at {self.table_path}")
        return pd.read_parquet(self.table_path)
