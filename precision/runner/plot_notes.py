"""The notes printed under figures (and under the summary's tables): the caveats that head
them, never capped (:data:`ERR_MAX_NOTE`; :func:`timing_notes`, when TFLOP/s were timed
while a run computed several points at once, on more than one machine
(:func:`timing_machines`, also used by the runner's warning on reused points) or with
numpy's BLAS not recorded as single-threaded, from the run records of provenance.json:
:func:`read_runs`, :func:`run_concurrency`), the cap on
the other lists (:func:`cap_notes`) and the points a figure cannot show
(:func:`_missing_notes`). The notes on the dimensions split into panel rows and on the term
counts that repeats chose are made with the figure's frame
(:func:`~precision.runner.plot_frame.prepare`); :func:`_note_blocks` puts them all in the
order the figure prints them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from precision.runner.plot_labels import (
    ERROR_METRICS,
    _of,
    _who,
    all_repeats_statistic,
    drawable,
    drawable_words,
)
from precision.runner.store import ResultsDir

if TYPE_CHECKING:
    from precision.runner.plot_frame import _Frame

MAX_NOTE_LINES = 6
#: The note under an ``err_max`` figure (and table) with a value of 1 or more: an elementwise
#: relative error is largest where the exact entry is smallest, whatever the method.
ERR_MAX_NOTE = (
    "err_max = max over entries of |C − C_exact| / |C_exact|: entries with C_exact near 0 "
    "set it, hence values ≥ 1"
)


def cap_notes(lines: list[str], more: str = "") -> list[str]:
    """At most :data:`MAX_NOTE_LINES` lines, the last saying how many were left out."""
    if len(lines) <= MAX_NOTE_LINES:
        return lines
    left = len(lines) - (MAX_NOTE_LINES - 1)
    return lines[: MAX_NOTE_LINES - 1] + [f"... and {left} more{more}"]


def _note_blocks(frame: _Frame, metric: str) -> list[tuple[str, list[str]]]:
    """The blocks of notes printed under the figure of ``frame`` for ``metric``, each a
    heading and its lines (a block without lines is left out)."""
    # Under the figure: the rows split and repeats that chose different term counts, then
    # the points not shown.
    return [
        (head, lines)
        for head, lines in (
            ("Notes:", frame.caveats + cap_notes(frame.split_notes + frame.terms_notes)),
            (f"Not shown (no {drawable_words(metric)} value):", _missing_notes(frame, metric)),
        )
        if lines
    ]


def _missing_notes(frame: _Frame, metric: str) -> list[str]:
    d = frame.data
    if d.empty:
        return []
    xname = "size" if frame.x == "size" else frame.x
    # dropna=False: rows without an x value (on a terms axis: baselines, and Ozaki points
    # with terms = "auto" that were not computed, so no count is known) are listed too.
    grouped = d.groupby(["_series", "_row", "_col", "_x", "_rowbase"], sort=True, dropna=False)
    # (as drawn: a panel value of such rows that no row with an x value has means every panel;
    # a row label missing only through the rows prepare() split, the panels split from it)
    placed = d[d["_x"].notna()]
    panel_rows, panel_cols = set(placed["_row"]), set(placed["_col"])
    panel_bases = set(placed["_rowbase"])
    lines: dict[tuple[str, str], list[str]] = {}
    for (series, row, col, x, base), g in grouped:
        valid = int(g["_valid"].sum())
        if valid == len(g):
            continue
        bad = g[~g["_valid"]]
        reasons = []
        for status, value in zip(bad["_status"], bad["_value"], strict=True):
            if status != "ok":
                reasons.append(status)
            elif np.isnan(value):
                reasons.append("NaN" if metric != "tflops" else "not timed")
            elif np.isinf(value):
                reasons.append("Inf")
            elif value == 0:
                reasons.append("0 (exact)" if metric in ERROR_METRICS else "0")
            else:
                reasons.append("negative")
        why = "/".join(dict.fromkeys(reasons))
        if valid:
            why = f"{len(bad)} of {len(g)} repeats {why}"
            value = g["_value"].where(g["_ok"].astype(bool))
            statistic = all_repeats_statistic(metric)(value)
            if not drawable(pd.Series([statistic]), metric).iloc[0]:
                why += " (no median drawn: summary.md has none either)"
        x = float(str(x))
        if math.isnan(x) and len(placed):  # drawn in every panel of a value not placed
            row = row if row in panel_rows else (base if base in panel_bases else "")
            col = col if col in panel_cols else ""
        key = (_who(series, row, col), why)
        lines.setdefault(key, []).append("" if math.isnan(x) else str(int(x)))
    out = []
    for (who, why), xs in lines.items():
        at = [x for x in xs if x]
        where = [f"at {xname} = {', '.join(at)}"] if at else []
        if len(at) < len(xs):
            where.append(f"without a {xname} value")
        out.append(_of(who, f"{why} {' and '.join(where)}"))
    return cap_notes(out, " (summary.csv lists them with their status)")


#: Environment variables that set the thread count of numpy's BLAS (OpenBLAS, in its order
#: of precedence); ``precision run`` records them in provenance.json (``blas_threads_env``).
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


#: The note under TFLOP/s figures of numpy BLAS timings not recorded as single-threaded
#: (:func:`timing_notes`).
BLAS_NOTE = (
    "numpy's multithreaded BLAS stalls on a loaded machine: time it with OPENBLAS_NUM_THREADS=1"
)


def read_runs(results_dir: Path) -> list[dict]:
    """The run records of ``results_dir/provenance.json``, one per ``precision run``, oldest
    first ([] when the file is missing or unreadable:
    :meth:`~precision.runner.store.ResultsDir.read_provenance`)."""
    results_dir = Path(results_dir)
    runs, _ = ResultsDir(results_dir.parent, results_dir.name).read_provenance()
    return [run for run in runs if isinstance(run, dict)]


def run_concurrency(run: dict) -> tuple[int | None, int, str]:
    """How many points the run of provenance record ``run`` computed at once (None: unknown,
    workers of a ``--scheduler`` cluster), how many of them were CPU workers beside the GPU
    workers of ``--gpus``, and the options that asked for it. Taken from the record's
    ``concurrent_jobs`` where recorded, else from its ``executor``, ``jobs`` and ``gpus``
    (Dask's local cluster defaults to one worker per core)."""
    from precision.runner.cluster import concurrent_points

    executor, scheduler = run.get("executor", "local"), run.get("scheduler")
    jobs = run.get("jobs") if isinstance(run.get("jobs"), int) else None
    gpus = run.get("gpus") if isinstance(run.get("gpus"), list) else None
    if scheduler and executor != "local":
        return None, 0, f"--scheduler {scheduler}"
    recorded = run.get("concurrent_jobs")
    cores = run.get("cpu_count") if isinstance(run.get("cpu_count"), int) else None
    n = (
        recorded
        if isinstance(recorded, int)
        else concurrent_points(executor, jobs, scheduler, gpus, cores=cores)
    )
    if executor == "local":
        return n, 0, f"--jobs {jobs or 1}"
    if gpus:
        cpu = jobs or 0
        return n, cpu, f"--gpus: {len(gpus)} GPU and {cpu} CPU workers"
    return n, 0, f"--executor dask, {n or 'one per core'} workers"


def _single_blas_thread(run: dict | None) -> bool:
    """True when the run of ``run`` is recorded to have given numpy's BLAS one thread."""
    if run is None:
        return False
    if run.get("cpu_count") == 1:
        return True
    env = run.get("blas_threads_env")
    if run.get("executor", "local") != "local" or not isinstance(env, dict):
        return False  # Dask workers set their own (see precision.runner.cluster)
    value = next((env[v] for v in BLAS_THREAD_VARS if env.get(v) not in (None, "")), None)
    return str(value).strip() == "1"


def _runs_of(table: pd.DataFrame, runs: list[dict]) -> list[dict | None]:
    """The run record that computed each row: the latest run that started (``created_utc``)
    no later than the row was made (None where a time is missing or unreadable)."""
    starts = pd.to_datetime(
        pd.Series([r.get("created_utc") for r in runs], dtype=object), utc=True, errors="coerce"
    )
    known = [(t, r) for t, r in zip(starts, runs, strict=True) if not pd.isna(t)]
    if not known or "created_utc" not in table:
        return [None] * len(table)
    known.sort(key=lambda tr: tr[0])
    times = np.array([t.value for t, _ in known])
    made = pd.to_datetime(table["created_utc"], utc=True, errors="coerce")
    out: list[dict | None] = []
    for t in made:
        if pd.isna(t):
            out.append(None)
            continue
        i = int(np.searchsorted(times, t.value, side="right")) - 1
        out.append(known[max(i, 0)][1])  # made before every recorded start: the first run
    return out


def timing_notes(table: pd.DataFrame, runs: list[dict] | None = None) -> list[str]:
    """Notes for TFLOP/s figures and tables, from the rows with a TFLOP/s value and the
    ``precision run`` records ``runs`` (:func:`read_runs`; None: unknown) that computed them:

    - rows timed while the run computed several points at once (``--jobs N``, several Dask
      workers; the GPU rows of ``--gpus`` only when CPU workers ran beside them, as each GPU
      times one GEMM at a time): their speeds are not one job's;
    - CPU-timed rows from more than one CPU (model and core count: columns ``cpu``,
      ``cpu_count``), or GPU-timed rows from more than one GPU model (``gpu``): a run resumed
      on another machine;
    - rows of numpy's BLAS (its matmul, the Ozaki emulation's integer GEMMs), timed by the
      wall clock, unless their runs recorded one BLAS thread: a multithreaded OpenBLAS
      stalls for milliseconds per call while another process holds a core (measured: 24 ms
      for a 0.05 ms SGEMM at n = 128 on 2 cores), far below its speed on an idle machine.
    """
    if "tflops" not in table:
        return []
    values = pd.to_numeric(table["tflops"], errors="coerce")
    ok = table["status"] == "ok" if "status" in table else pd.Series(True, index=table.index)
    timed = table[ok & np.isfinite(values) & (values > 0)]
    if timed.empty:
        return []
    gpu = gpu_timed(timed)
    made_by = _runs_of(timed, runs) if runs else [None] * len(timed)
    notes = []
    shared: list[tuple[int, str]] = []
    for run, on_gpu in zip(made_by, gpu, strict=True):
        if run is None:
            continue
        n, cpu_workers, how = run_concurrency(run)
        if on_gpu and run.get("gpus"):
            if cpu_workers:
                shared.append((n or 0, how))
        elif n is not None and n > 1:
            shared.append((n, how))
    if shared:
        n, how = max(shared)
        share = "" if len(shared) == len(timed) else f" ({len(shared)} of {len(timed)} rows)"
        notes.append(
            f"timed with up to {n} points computed at once ({how}){share}: not one job's speed; "
            "time with one job (--force)"
        )
    for on_device, kind in ((False, "CPU"), (True, "GPU")):
        machines = _machines(timed[gpu == on_device])
        if len(machines) > 1:
            listed = ", ".join(f"{name} ({n} rows)" for name, n in machines.items())
            notes.append(
                f"{kind} timings from {len(machines)} machines: {listed}; speeds of different "
                "machines are not comparable (rerun on one machine with --force)"
            )
    blas = timed["backend"].eq("numpy") & ~gpu
    if "terms_requested" in timed:
        blas |= timed["backend"].eq("emulator") & timed["terms_requested"].notna() & ~gpu
    if any(b and not _single_blas_thread(r) for b, r in zip(blas, made_by, strict=True)):
        notes.append(BLAS_NOTE)
    return notes


def gpu_timed(rows: pd.DataFrame) -> pd.Series:
    """Which rows a GPU's clock timed (``timing`` "cuda_events"; rows without a ``timing``
    value: the cuda and cublas backends)."""
    on_gpu = rows["backend"].isin(["cuda", "cublas"])
    if "timing" in rows:
        on_gpu = rows["timing"].eq("cuda_events") | (rows["timing"].isna() & on_gpu)
    return on_gpu


def machine_label(cpu: Any, cpu_count: Any, gpu: Any, on_gpu: bool) -> str | None:
    """The machine that times a row, as far as its speed goes: the GPU model for GPU-timed
    rows, "CPU model ×cores" for the others (the CPU alone where the core count is
    unknown); None where it is not recorded (rows written before the CPU was, CPU rows
    without ``cpu``, GPU rows without ``gpu``)."""
    if on_gpu:
        return None if gpu is None or pd.isna(gpu) else str(gpu)
    if cpu is None or pd.isna(cpu):
        return None
    return str(cpu) if cpu_count is None or pd.isna(cpu_count) else f"{cpu} ×{int(cpu_count)}"


def timing_machines(rows: pd.DataFrame) -> pd.Series:
    """:func:`machine_label` of every row of ``rows`` (None where unknown)."""

    def column(name: str) -> pd.Series:
        return rows[name] if name in rows else pd.Series(None, index=rows.index, dtype=object)

    labels = [
        machine_label(cpu, n, gpu, bool(on))
        for cpu, n, gpu, on in zip(
            column("cpu"), column("cpu_count"), column("gpu"), gpu_timed(rows), strict=True
        )
    ]
    return pd.Series(labels, index=rows.index, dtype=object)


def _machines(timed: pd.DataFrame) -> dict[str, int]:
    """How many of ``timed``'s rows each machine timed (:func:`timing_machines`), most rows
    first; rows whose machine is not recorded are left out."""
    counts = timing_machines(timed).dropna().value_counts()
    return dict(sorted(((str(k), int(n)) for k, n in counts.items()), key=lambda c: (-c[1], c[0])))
