"""The on-disk layout of one experiment's results, and safe writes into it.

::

    results/<name>/
        .lock                who holds the directory's lock (host, pid); informational
        config.toml          the config, copied verbatim (rerun it to reproduce the table)
        config.<UTC>.toml    an earlier, different config of the same name (kept, never mixed)
        results.<UTC>.parquet, .csv  the table of that earlier config's points (kept with it)
        provenance.json      package version, git commit, host, GPU, ... of each run
        points/<slug>-<id>.parquet   one file per completed sweep point (resume unit)
        points/rejected/     point files that failed their identity check (kept, not used)
        results.parquet, results.csv  every point of the current config, combined
        figures/*.png, *.pdf

Every file is written to a temporary name in the same directory and renamed into place, so
an interrupted run never leaves a half-written file under its final name; files get the
permissions of the user's umask (like any file the user creates), not ``mkstemp``'s 0600.
A run holds an exclusive ``flock`` on the directory itself from before it writes anything
until it has drawn its figures, so two runs never interleave in one directory (a
deleted ``.lock`` changes nothing: it only names the holder); the holder
removes leftover ``.*.tmp`` files of earlier, killed runs. A point file is used only if the
``point_id`` of every row equals the id in its file name and the id of the point read.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import math
import os
import re
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeGuard

import pandas as pd

from precision.runner.config import ExperimentConfig
from precision.runner.execute import DONE_STATUSES
from precision.runner.sweep import Point


class StoreError(RuntimeError):
    """A results directory cannot be used or written (locked, read-only, disk full, ...).

    The message names the path and says what to do; files already stored are untouched.
    """


class DirectoryInUse(StoreError):
    """The results directory is locked by another run; ``holder`` names it (``host H pid P``,
    or ``unknown``). The message is for ``precision run``; other commands say their own."""

    def __init__(self, message: str, path: Path | None = None, holder: str = "unknown"):
        super().__init__(message)
        self.path = path
        self.holder = holder


def _umask() -> int:
    """The process umask (read without changing it where /proc allows)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def finished(rows: pd.DataFrame | None, point: Point) -> TypeGuard[pd.DataFrame]:
    """Whether ``rows`` are a computed result of ``point``: one row per repeat, every status
    ok or nan (a NaN/Inf result is a finding, not a failure)."""
    return (
        rows is not None
        and len(rows) == point.repeats
        and bool(rows["status"].isin(DONE_STATUSES).all())
    )


#: Why a path cannot be written, for read-only file systems and missing permissions.
NOT_WRITABLE = "it is not writable (read-only file system or permissions)"


def os_error_reason(exc: OSError) -> str:
    """Why a write failed, in words: a full disk, no write access, or the system's message."""
    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return NOT_WRITABLE
    return exc.strerror or str(exc)


def _describe_os_error(exc: OSError, path: Path) -> str:
    if not path.exists() and not path.parent.exists():  # nothing there to keep
        return f"cannot write {path}: {os_error_reason(exc)}"
    return (
        f"cannot write {path}: {os_error_reason(exc)}; the files already stored there are "
        "kept unchanged"
    )


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` on a temporary file next to ``path``, then rename it to ``path``.

    The file gets mode ``0o666 & ~umask``. An ``OSError`` (full disk, read-only directory)
    becomes a :class:`StoreError` naming ``path``; the temporary file is removed and an
    existing ``path`` is left as it was.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise StoreError(_describe_os_error(exc, path)) from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        write(Path(tmp))
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise StoreError(_describe_os_error(exc, path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _numbered(path: Path, suffix: str | None = None) -> Iterator[Path]:
    """``path``, then ``<stem>_2<suffix>``, ``_3``, ...: the names tried for a new file.
    ``suffix=""`` numbers at the end of the whole name (a folder such as ``figures.<UTC>``,
    whose stamp is no suffix)."""
    suffix = path.suffix if suffix is None else suffix
    stem = path.name[: len(path.name) - len(suffix)]
    yield path
    number = 2
    while True:
        yield path.with_name(f"{stem}_{number}{suffix}")
        number += 1


def claim_new(path: Path) -> Path:
    """Create ``path`` empty, or if it exists ``<stem>_2<suffix>``, ``_3``, ... (the first
    free one), with an exclusive create, and return the path created. Two benches that claim
    the same name at once get different files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for candidate in _numbered(path):
        try:
            with candidate.open("x"):
                return candidate
        except FileExistsError:
            continue
    raise AssertionError("unreachable")  # (_numbered never ends)


def rename_new(src: Path, dest: Path) -> Path:
    """Give the file ``src`` the name ``dest``, or ``<stem>_2<suffix>``, ... where that is
    taken, never replacing another file, and return the new path.

    A hard link under the new name, then ``src`` unlinked: at every moment the file has at
    least one complete name, so a process killed even by SIGKILL leaves no empty or partial
    file under a kept name (at worst both names). Where the file system has no hard links,
    the new name is claimed empty first (:func:`claim_new`) and ``src`` renamed over it.
    """
    for candidate in _numbered(dest):
        try:
            os.link(src, candidate)
        except FileExistsError:
            continue
        except OSError:  # no hard links here (FAT, some network file systems)
            claimed = claim_new(dest)
            try:
                os.replace(src, claimed)
            except BaseException:
                claimed.unlink(missing_ok=True)
                raise
            return claimed
        os.unlink(src)
        return candidate
    raise AssertionError("unreachable")


def file_in_the_way(path: Path) -> Path | None:
    """The nearest of ``path`` and the folders above it that exists, where it is a file (no
    directory can then be made at ``path``); None otherwise."""
    found = next((p for p in (path, *path.parents) if p.exists()), None)
    return None if found is None or found.is_dir() else found


#: Seconds between the ``still waiting`` lines of :meth:`ResultsDir.lock`.
WAIT_REPORT_S = 30.0

#: Age in seconds after which a run's clean-up removes a temporary file in ``figures/``.
STALE_FIGURE_TMP_S = 600.0


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
    def rejected_dir(self) -> Path:
        return self.points_dir / "rejected"

    @property
    def figures_dir(self) -> Path:
        return self.path / "figures"

    @property
    def table_path(self) -> Path:
        return self.path / "results.parquet"

    @property
    def csv_path(self) -> Path:
        return self.path / "results.csv"

    @property
    def lock_path(self) -> Path:
        return self.path / ".lock"

    # ------------------------------------------------------------------------------ lock

    @contextlib.contextmanager
    def lock(
        self,
        wait: float = 0.0,
        report: Callable[[str], None] | None = None,
        every: float | None = WAIT_REPORT_S,
    ) -> Iterator[list[str]]:
        """Hold the directory's exclusive lock; yields the notes of the clean-up it did.

        Waits up to ``wait`` seconds (``inf``: no limit) for another run to finish, then raises
        :class:`DirectoryInUse` naming the holder (host and pid). The lock is an ``flock`` on
        the results directory itself: the kernel releases it when the holder exits, even by
        SIGKILL, so a killed run never leaves a stale lock, and no file can be deleted to
        break it. ``.lock`` only records the holder, for the message. Leftover temporary files
        are removed on entry.

        ``report`` gets one line when a wait begins (:meth:`waiting_line`) and, every
        ``every`` seconds of it (None: never), ``still waiting, N s so far``.
        """
        import fcntl

        # (mkdir would say "File exists" or "Not a directory", naming no file)
        blocker = file_in_the_way(self.path)
        if blocker is not None:
            which = "it" if blocker == self.path else str(blocker)
            raise StoreError(
                f"cannot write {self.path}: {which} is a file, not a directory (a run's "
                "results go into the directory <results-dir>/<name>): move the file, or use "
                "another name or --results-dir"
            )
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise StoreError(_describe_os_error(exc, self.path)) from None
        try:
            started = time.monotonic()
            deadline = started + wait
            reports = 0  # the lines reported so far
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    now = time.monotonic()
                    if now >= deadline:
                        holder = self.holder()
                        hint = (
                            f"still, after waiting {wait:g} s" if wait > 0
                            else "--wait SECONDS waits for it"
                        )  # fmt: skip
                        raise DirectoryInUse(
                            f"{self.path} is in use by another run ({holder}); "
                            "wait for it to finish, or use another name or --results-dir "
                            f"({hint})",
                            self.path,
                            holder,
                        ) from None
                    if report is not None and reports == 0:
                        report(self.waiting_line(wait))
                        reports = 1
                    elif report is not None and every and now - started >= reports * every:
                        reports = max(reports, int((now - started) // every))  # (none skipped)
                        report(f"still waiting, {reports * every:g} s so far")
                        reports += 1
                    time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
            with contextlib.suppress(OSError, StoreError):  # (informational only)
                holder = f"host {socket.gethostname()} pid {os.getpid()}\n"
                atomic_write(self.lock_path, lambda tmp: tmp.write_text(holder))
            yield self.remove_temporaries()
        finally:
            os.close(fd)  # releases the flock

    def holder(self) -> str:
        """Who holds the lock, as ``.lock`` names it (``host H pid P``), or ``unknown``."""
        try:
            holder = self.lock_path.read_text(errors="replace").strip()
        except OSError:
            holder = ""
        return holder or "unknown"

    def waiting_line(self, wait: float) -> str:
        """``waiting up to 100 s for the run holding results/q (host vm, pid 28929) ...``."""
        found = re.fullmatch(r"host (\S+) pid (\d+)", self.holder())
        who = f"host {found[1]}, pid {found[2]}" if found else "holder unknown"
        if math.isinf(wait):
            return f"waiting for the run holding {self.path} ({who}), with no time limit ..."
        return f"waiting up to {wait:g} s for the run holding {self.path} ({who}) ..."

    def remove_temporaries(self) -> list[str]:
        """Delete ``.*.tmp`` files left by killed runs (call only while holding the lock).

        In ``figures/``, which ``precision plot`` writes without the lock, only temporary
        files older than :data:`STALE_FIGURE_TMP_S` are removed: a younger one may be a
        figure being written right now.
        """
        notes: list[str] = []
        for folder in (self.path, self.points_dir, self.figures_dir):
            if folder.is_dir():
                for tmp in folder.glob(".*.tmp"):
                    with contextlib.suppress(OSError):
                        if folder == self.figures_dir and (
                            time.time() - tmp.stat().st_mtime < STALE_FIGURE_TMP_S
                        ):
                            continue
                        tmp.unlink()
                        notes.append(f"removed leftover temporary file {tmp}")
        return notes

    # ------------------------------------------------------------------------------ points

    def point_path(self, point: Point) -> Path:
        """The result file of ``point``."""
        return self.points_dir / f"{point.slug}-{point.id}.parquet"

    def write_point(self, point: Point, rows: pd.DataFrame) -> None:
        """Store ``point``'s rows atomically."""
        ids = set(rows["point_id"]) if "point_id" in rows else set()
        if ids != {point.id}:
            raise ValueError(f"rows of point {point.id} carry point_id {sorted(ids)}")
        atomic_write(self.point_path(point), lambda tmp: rows.to_parquet(tmp, index=False))

    def _check_point_file(self, path: Path, expected_id: str) -> tuple[pd.DataFrame | None, str]:
        """(rows, "") if ``path`` holds rows of ``expected_id`` only, else (None, why)."""
        try:
            rows = pd.read_parquet(path)
        except Exception as exc:  # a foreign, truncated or damaged file
            return None, f"unreadable ({type(exc).__name__})"
        if "point_id" not in rows:
            return None, "has no point_id column"
        ids = sorted(set(rows["point_id"].astype(str)))
        if ids != [expected_id]:
            return None, f"holds point_id {', '.join(ids) or 'none'}, not {expected_id}"
        return rows, ""

    def read_point(self, point: Point) -> pd.DataFrame | None:
        """``point``'s stored rows, or None if absent, unreadable or not ``point``'s own."""
        path = self.point_path(point)
        if not path.exists():
            return None
        return self._check_point_file(path, point.id)[0]

    def reject_foreign_points(self) -> list[str]:
        """Move every point file whose rows are not those named by its file name (its
        ``-<id>.parquet`` suffix) into ``points/rejected/``; returns one note per file.

        Catches a file copied or renamed under another point's name, and truncated files.
        Nothing is deleted: a rejected file keeps its name (with a time stamp) for inspection,
        and its point is computed again (or restored by :meth:`adopt_table_points`). Call only
        while holding the lock.
        """
        notes: list[str] = []
        if not self.points_dir.is_dir():
            return notes
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        for path in sorted(self.points_dir.glob("*.parquet")):
            expected = path.stem.rsplit("-", 1)[-1]
            _, why = self._check_point_file(path, expected)
            if why:
                try:
                    self.rejected_dir.mkdir(exist_ok=True)
                except OSError as exc:
                    raise StoreError(_describe_os_error(exc, self.rejected_dir)) from None
                dest = self._keep(path, self.rejected_dir / f"{path.stem}.{stamp}.parquet")
                notes.append(
                    f"point file {path.name} {why}: moved to {dest}; its point is recomputed "
                    "(or taken from results.parquet, if the table holds it)"
                )
        return notes

    def adopt_table_points(self, points: list[Point]) -> list[str]:
        """Write a point file for every point of ``points`` that has none but whose finished
        rows (all repeats, status ok or nan) are in ``results.parquet``; returns one note.

        A results directory published or committed without its ``points/`` (the table is what
        gets shared) thereby keeps its results when its config is run again: they are
        resumed like any stored point instead of being recomputed, or replaced by
        "unavailable" rows on a machine without the backend. A row's ``point_id`` fixes all
        its parameters, so only the rows of exactly these points are taken. Call only while
        holding the lock, before anything rewrites the table.
        """
        if not self.table_path.exists():
            return []
        try:
            table = pd.read_parquet(self.table_path)
        except Exception:  # unreadable: nothing to adopt (the run rebuilds the table)
            return []
        if not {"point_id", "status", "repeat"} <= set(table.columns):
            return []
        by_id = dict(tuple(table.groupby(table["point_id"].astype(str), sort=False)))
        adopted = 0
        for point in points:
            rows = by_id.get(point.id)
            if rows is None or self.point_path(point).exists():
                continue
            # (a table may hold a point's rows twice, so the repeats are checked by index)
            if finished(rows, point) and set(rows["repeat"]) == set(range(point.repeats)):
                # the table's own columns (name, dist_label) are not part of a point's rows
                rows = rows.drop(columns=[c for c in ("name", "dist_label") if c in rows])
                self.write_point(point, rows.reset_index(drop=True))
                adopted += 1
        if not adopted:
            return []
        return [
            f"{adopted} finished point(s) had no point file but are in {self.table_path}: "
            f"written to {self.points_dir} and kept (not recomputed)"
        ]

    def keep_unreadable_table(self) -> list[str]:
        """Move an unreadable ``results.parquet`` (garbage, truncated, a git-LFS pointer) and
        the ``results.csv`` beside it to ``results.<UTC>.unreadable.parquet`` / ``.csv``
        before anything rewrites them; returns a note ([] where the table reads). The csv
        may be the only readable copy of rows that no point file holds (a directory
        published without ``points/``): the run then rebuilds the table from the point
        files alone, and the kept csv still has those rows. Call only holding the lock."""
        why = self._unreadable_table()
        if why is None:
            return []
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        kept = self._keep(self.table_path, self.path / f"results.{stamp}.unreadable.parquet")
        names = [kept.name]
        if self.csv_path.exists():  # (the csv takes the parquet's name, _2 and all)
            csv = self._keep(self.csv_path, kept.with_suffix(".csv"))
            names.append(csv.name)
        return [
            f"{self.table_path} was unreadable ({why}); kept as {' and '.join(names)}. The "
            "table is rebuilt from the point files; rows that only the old table held are in "
            "the kept files"
        ]

    def table_point_ids(self) -> set[str]:
        """The point ids of the rows of ``results.parquet`` (empty where it is absent,
        unreadable or has no ``point_id``)."""
        try:
            ids = pd.read_parquet(self.table_path, columns=["point_id"])["point_id"]
        except Exception:
            return set()
        return set(ids.astype(str))

    def is_done(self, point: Point) -> bool:
        """True if ``point`` has a stored result with every repeat computed.

        Computed means status "ok" or "nan" (the method's result holds NaN/Inf, a finding,
        not a failure). Points stored as unavailable or failed are retried by the next run
        (for example on a machine with a GPU).
        """
        return finished(self.read_point(point), point)

    # ------------------------------------------------------------------------------ metadata

    @staticmethod
    def _keep(path: Path, dest: Path) -> Path:
        """Move ``path`` to ``dest`` (:func:`rename_new`: ``_2`` and so on where that is
        taken, never over another file, never an empty kept file). Returns the new path."""
        try:
            return rename_new(path, dest)
        except OSError as exc:
            raise StoreError(_describe_os_error(exc, dest)) from None

    def save_config(self, config: ExperimentConfig, point_ids: set[str] | None = None) -> list[str]:
        """Copy the config file verbatim, keeping a previous, different one and its table.

        When ``config.toml`` holds another config, it is copied to ``config.<UTC>.toml`` and
        the table of its points (``results.parquet``, ``results.csv``) is moved to
        ``results.<UTC>.parquet`` / ``.csv``, all *before* the new config is written: a run
        stopped at any moment never leaves a table of one config next to another config, and
        the earlier table's rows are kept even where no point file holds them (a directory
        published without ``points/``). A name already taken (two changes in one second)
        gets ``_2`` and so on, the table the same as its config. No kept name is ever an
        empty file (:func:`rename_new`). A non-empty ``figures/`` goes to
        ``figures.<UTC>/`` likewise.

        ``point_ids``: the ids of ``config``'s points. Where the table holds a point not among
        them, it belongs to another config even if ``config.toml`` reads the same (the run's
        config *is* that file, edited in place) or is missing: the table and figures are kept
        aside in the same way, without a config to keep. Returns the kept names, the
        config's first where there is one; [] if unchanged."""
        dest = self.config_path
        previous = dest.read_bytes() if dest.exists() else None
        changed = previous is not None and (
            previous.decode("utf-8", errors="replace") != config.text
        )
        foreign = point_ids is not None and bool(self.table_point_ids() - point_ids)
        kept: list[str] = []
        if changed or foreign:
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            stem = stamp
            if changed:
                assert previous is not None
                earlier = previous  # (bound for the lambda)
                copy = self.path / f".config.{stamp}.toml.tmp"  # (a later run's clean-up)
                atomic_write(copy, lambda tmp: tmp.write_bytes(earlier))
                old_config = self._keep(copy, self.path / f"config.{stamp}.toml")
                kept.append(old_config.name)
                # the table takes its config's name (config.S_2.toml: results.S_2.parquet)
                stem = old_config.name.removeprefix("config.").removesuffix(".toml")
            for table in (self.table_path, self.csv_path):
                if table.exists():
                    moved = self._keep(table, self.path / f"results.{stem}{table.suffix}")
                    kept.append(moved.name)
                    stem = moved.name.removeprefix("results.").removesuffix(table.suffix)
            # its figures too: a run without figures (--no-plots) or one stopped before it
            # draws them would otherwise leave the earlier config's figures in figures/
            if self.figures_dir.is_dir() and any(self.figures_dir.iterdir()):
                kept.append(self._keep_folder(self.figures_dir, self.path / f"figures.{stem}"))
        if changed or previous is None:
            atomic_write(dest, lambda tmp: tmp.write_text(config.text, encoding="utf-8"))
        return kept

    @staticmethod
    def _keep_folder(path: Path, dest: Path) -> str:
        """Rename the folder ``path`` to ``dest`` (``_2`` and so on where that is taken, never
        into or over another folder); returns the new name. The new name is claimed empty
        first (``mkdir``), then the rename replaces that empty folder in one step. The number
        goes at the end of the name (``figures.S_2``): the stamp is no suffix to keep."""
        for candidate in _numbered(dest, suffix=""):
            try:
                candidate.mkdir()
            except FileExistsError:
                continue
            except OSError as exc:
                raise StoreError(_describe_os_error(exc, candidate)) from None
            try:
                os.rename(path, candidate)
            except OSError as exc:
                candidate.rmdir()
                raise StoreError(_describe_os_error(exc, candidate)) from None
            return candidate.name
        raise AssertionError("unreachable")

    def read_provenance(self) -> tuple[list[dict], str | None]:
        """(earlier runs' records, None) or ([], why) if ``provenance.json`` is unreadable."""
        if not self.provenance_path.exists():
            return [], None
        try:
            runs = json.loads(self.provenance_path.read_text(encoding="utf-8"))["runs"]
            if not isinstance(runs, list):
                raise TypeError("'runs' is not a list")
            return runs, None
        except (ValueError, KeyError, TypeError, OSError) as exc:
            return [], f"{type(exc).__name__}: {exc}"

    def save_provenance(self, info: dict) -> list[str]:
        """Write ``provenance.json``: this run's record, after those of earlier runs.

        An unreadable (truncated, garbage) file is not overwritten: it is kept as
        ``provenance.<UTC>.corrupt.json`` and a note saying so is returned.
        """
        runs, why = self.read_provenance()
        notes: list[str] = []
        if why is not None:
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            kept = self._keep(self.provenance_path, self.path / f"provenance.{stamp}.corrupt.json")
            notes.append(f"{self.provenance_path} was unreadable ({why}); kept as {kept.name}")
        doc = {"latest": info, "runs": [*runs, info]}
        text = json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n"
        atomic_write(self.provenance_path, lambda tmp: tmp.write_text(text))
        return notes

    # ------------------------------------------------------------------------------ table

    def combine(self, points: list[Point], labels: dict[str, str]) -> pd.DataFrame:
        """Concatenate the stored rows of ``points`` (absent or foreign ones skipped) in sweep
        order."""
        frames = []
        for point in points:
            rows = self.read_point(point)
            if rows is not None:
                frames.append(rows.assign(dist_label=labels.get(point.id, point.distribution)))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def write_table(self, table: pd.DataFrame, name: str) -> None:
        """Write the combined ``results.parquet`` and ``results.csv`` (name column first).

        The csv is written first: a run stopped between the two leaves a csv newer than the
        parquet, which :meth:`table_is_stale` reports, so the pair is rewritten together.
        """
        table = named_table(table, name)
        atomic_write(self.csv_path, lambda tmp: table.to_csv(tmp, index=False))
        atomic_write(self.table_path, lambda tmp: table.to_parquet(tmp, index=False))

    def _unreadable_table(self) -> str | None:
        """Why an existing ``results.parquet`` cannot be read (the exception's name), or None
        where it reads or is absent."""
        if not self.table_path.exists():
            return None
        try:
            pd.read_parquet(self.table_path, columns=["name"])
        except Exception as exc:
            return type(exc).__name__
        return None

    def table_is_stale(self) -> bool:
        """True if ``results.parquet`` is absent, unreadable, or older than a point file, or
        ``results.csv`` is newer than it (a run stopped between writing the two)."""
        if not self.table_path.exists() or self._unreadable_table() is not None:
            return True
        mtime = self.table_path.stat().st_mtime
        if self.csv_path.exists() and self.csv_path.stat().st_mtime > mtime:
            return True
        return any(p.stat().st_mtime > mtime for p in self.points_dir.glob("*.parquet"))

    def read_table(self) -> pd.DataFrame:
        """The combined results table; :class:`StoreError` naming the path if absent or
        unreadable (rebuild it from the point files with :func:`recombine`)."""
        if not self.table_path.exists():
            raise StoreError(f"no results table at {self.table_path}")
        try:
            return pd.read_parquet(self.table_path)
        except Exception as exc:
            if self.points_dir.is_dir() and self.config_path.exists():
                how = "`precision plot` rebuilds it from the point files"
            else:  # (a directory published without points/: nothing to rebuild it from)
                csv = " or read results.csv" if self.csv_path.exists() else ""
                how = (
                    "there are no point files to rebuild it from: restore it (`git lfs pull` "
                    f"where it is a git-LFS pointer){csv}"
                )
            raise StoreError(
                f"{self.table_path} is unreadable ({type(exc).__name__}); {how}"
            ) from None


def named_table(table: pd.DataFrame, name: str) -> pd.DataFrame:
    """``table`` as ``results.parquet`` holds it: a ``name`` column (the config's), first."""
    table = table.assign(name=name)
    return table[["name", *[c for c in table.columns if c != "name"]]]


def recombine(
    path: Path | str, *, wait: float = 0.0, notes: list[str] | None = None
) -> pd.DataFrame:
    """The results table of the results directory ``path``, rebuilt from its point files when
    ``results.parquet`` is missing, unreadable or older than one of them.

    Reads ``path/config.toml`` to know which points belong to the table, takes the
    directory's lock while it rewrites the table, and raises :class:`StoreError` with a
    message for the user when there is neither a readable table nor config and points. It
    never drops rows: a readable table that holds points the config does not have (the
    config edited after the run) is left as it is, with a StoreError saying so. Where
    ``path`` cannot be written (a read-only copy whose file times make the table look
    older than its points), the table is rebuilt in memory only, and a line saying so is
    appended to ``notes``."""
    from precision.console import directory_destination_problem

    path = Path(path)
    rd = ResultsDir(path.parent, path.name)
    if rd.table_is_stale() and rd.config_path.exists() and rd.points_dir.is_dir():
        from precision.runner.config import ConfigError, load_config
        from precision.runner.runner import combine_results, table_of
        from precision.runner.sweep import expand

        try:
            config = load_config(rd.config_path, check_plot=False)
        except ConfigError as exc:
            raise StoreError(f"cannot recombine {path}: {exc}") from None
        points = expand(config)
        others = rd.table_point_ids() - {p.id for p in points}
        if others:
            raise StoreError(
                f"{rd.table_path} holds {len(others)} point(s) that {rd.config_path} does "
                "not have (the config was changed after the run?), and is older than a point "
                "file: it is not rebuilt, which would drop those rows; `precision run "
                f"{rd.config_path}` keeps it aside and writes this config's table"
            )
        if directory_destination_problem(path, "results directory") is not None:
            table = table_of(config, rd, points)
            if table.empty:
                raise StoreError(f"{path} has no stored points yet (run the config first)")
            if notes is not None:
                notes.append(
                    f"{path} is not writable and its results.parquet is older than a point "
                    "file: the table was rebuilt from the point files in memory (not saved)"
                )
            return table
        with rd.lock(wait=wait):
            table = combine_results(config, rd, points)
        if table.empty:
            raise StoreError(f"{path} has no stored points yet (run the config first)")
        return rd.read_table()
    return rd.read_table()
