"""Every probe family at once: record them on the attached GPU, verify a directory of them.

``precision capture`` and ``precision verify`` use this module. A capture directory holds one
sub-directory per family, each with its own ``manifest.json``:

- ``mma_sync/``: the hand-written ``mma.sync`` probes (:mod:`precision.probe.capture`: m16n8k16
  f16/bf16, m16n8k8 tf32, m16n8k32 fp8/s8, chains of 4), sm_90 only;
- ``mma/``: the fragment-packed ``mma.sync`` probes of every other family
  (:mod:`precision.probe.packed`), built for the attached architecture (sm_75 on);
- ``wmma/``: the WMMA API, every type and shape (:mod:`precision.probe.wmma`);
- ``wgmma/``, ``wgmma_extra/``: ``wgmma.mma_async`` (:mod:`precision.probe.wgmma`), sm_90 only.

:func:`verify_dir` replays every recording found under a directory (a capture directory, one
family's directory such as tests/data/sm90, or a single family file set) through the emulator
and returns one :class:`Row` per instruction and data kind: the table whose every line must
read 100 %. What it cannot count in full (a directory of ``.npz`` files without a family's
manifest, a listed recording missing, a listed file no reader of its family replays) is
refused, never left out. Every output is compared bit for bit, f64 NaN payloads included
(:mod:`precision.tensorcore.dmma_nan`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FAMILIES = ("mma_sync", "mma", "wmma", "wgmma", "wgmma_extra")


@dataclass(frozen=True)
class Row:
    """One line of the match table: outputs of one instruction and data kind."""

    family: str
    instruction: str
    kind: str
    outputs: int
    matches: int
    note: str = ""

    @property
    def percent(self) -> float:
        return 100.0 * self.matches / self.outputs if self.outputs else float("nan")


def capture_all(out_dir: str | Path, *, seed: int = 1, log: Callable[[str], Any] = print) -> dict:
    """Record every probe family the attached GPU runs into ``out_dir``/<family>; a summary."""
    import cupy as cp

    from precision.probe import capture, packed, wgmma, wmma

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sm = int(cp.cuda.Device().compute_capability)
    done: dict[str, Any] = {"compute_capability": sm, "families": {}}
    log(f"== mma (fragment-packed probes) on sm_{sm}")
    done["families"]["mma"] = packed.record(out / "mma", seed=seed, log=log)["instructions"]
    log("== wmma")
    done["families"]["wmma"] = wmma.record(out / "wmma", seed=seed, log=log)["instructions"]
    if sm == 90:
        log("== mma_sync (hand-written sm_90 probes)")
        m = capture.capture(out / "mma_sync", seed=seed, tiles=capture.DEFAULT_TILES, log=log)
        done["families"]["mma_sync"] = m["instructions"]
        log("== wgmma")
        done["families"]["wgmma"] = wgmma.record(out / "wgmma", log=log)["instructions"]
        log("== wgmma extras")
        done["families"]["wgmma_extra"] = wgmma.record_extra(out / "wgmma_extra", log=log)[
            "instructions"
        ]
    else:
        log(f"mma_sync, wgmma: sm_90 probes, not run on sm_{sm}")
    return done


def _rows_from_match(family: str, name: str, m: dict, note: str = "") -> list[Row]:
    """Rows from a ``{kind: (eq, n), "all": ...}`` match dict (wmma / wgmma modules)."""
    return [Row(family, name, k, n, eq, note) for k, (eq, n) in m.items() if k != "all"]


#: Row note where ``device="gpu"`` replays an instruction with a CPU model instead.
CPU_NOTE = "on the CPU: {}"


def _verify_mma_sync(d: Path, device: str) -> list[Row]:
    from precision.probe.capture import (
        MANIFEST,
        load_recording,
        manifest_compute_capability,
        read_manifest,
        recording_paths,
        verify_recording,
    )
    from precision.tensorcore import mma

    # the hand-written probes run on sm_90 only and replay through the sm90 model: a manifest
    # naming another GPU is a recording these models do not describe
    where = (d if d.is_dir() else d.parent) / MANIFEST
    cc = manifest_compute_capability(where, read_manifest(where.parent) or {})
    if cc != 90:
        raise ValueError(
            f"{where}: compute_capability {cc}: the mma_sync probes are sm_90 recordings, "
            "replayed through the sm90 model"
        )
    engine = functools.partial(mma, device=device)
    rows = []
    for p in recording_paths(d):
        r = verify_recording(load_recording(p), engine)
        note = r.error or ""
        rows += [Row("mma_sync", r.instr.name, k, n, m, note) for k, (n, m) in r.counts.items()]
    return rows


def _verify_mma(d: Path, device: str, only: set[str] | None = None) -> list[Row]:
    from precision.probe import packed

    table = packed.verify(d, device, only=only)
    return [
        Row("mma", name, kind, n, m)
        for name, kinds in table.items()
        for kind, (n, m) in kinds.items()
    ]


def _verify_wmma(d: Path, device: str, only: set[str] | None = None) -> list[Row]:
    from precision.probe import wmma

    return wmma_rows(wmma.compare(d, device, only=only), device)


def wmma_rows(table: dict[str, Any], device: str = "cpu") -> list[Row]:
    """The verdict rows of a :func:`precision.probe.wmma.compare` table: per recording, the
    model ``precision.mma`` uses for it (WMMA floats, ``op="wmma"``; integers and b1, exact
    arithmetic; f64, the FMA chain with DMMA's NaN payloads)."""
    from precision.probe import wmma

    cpu = CPU_NOTE.format("exact integer model") if device == "gpu" else ""
    rows = []
    for name, models in table.items():
        p = wmma.get_probe(name)
        if p.a in ("f16", "bf16", "tf32"):
            rows += _rows_from_match("wmma", name, models["mma(op='wmma')"])
        elif p.a == "s8" and device == "gpu" and "mma(op='wmma')" in models:
            rows += _rows_from_match("wmma", name, models["mma(op='wmma')"])
        elif p.a == "b1":
            rows += _rows_from_match("wmma", name, models["exact b1"], cpu)
        elif p.a == "f64":  # FMA chain with DMMA's NaN payloads, every bit
            f64 = CPU_NOTE.format("the f64 FMA chain") if device == "gpu" else ""
            rows += _rows_from_match("wmma", name, models["dmma.fma_chain"], f64)
        else:
            rows += _rows_from_match("wmma", name, models["exact"], cpu)
    return rows


def _verify_wgmma(d: Path, extra: bool, device: str, only: set[str] | None = None) -> list[Row]:
    from precision.probe import wgmma

    compare = wgmma.compare_extra if extra else wgmma.compare
    table = compare(d, device, only=only)
    return wgmma_rows(table, device)


def wgmma_rows(table: dict[str, Any], device: str = "cpu") -> list[Row]:
    """The verdict rows of a :func:`precision.probe.wgmma.compare` / ``compare_extra`` table:
    per recording, ``precision.mma(op="wgmma")`` (exact arithmetic for the integer extras on
    the CPU); the other models of the table are comparisons, not verdicts."""
    from precision.probe import wgmma

    rows = []
    for name, models in table.items():
        if name in wgmma.EXTRA:
            integer = wgmma.EXTRA[name].integer and device == "cpu"
            label = "exact" if integer else "precision.mma(op='wgmma')"
            rows += _rows_from_match("wgmma_extra", name, models[label])
        else:
            rows += _rows_from_match("wgmma", name, models["wgmma_vs_precision_mma_wgmma"])
    return rows


def print_verdict(rows: list[Row]) -> int:
    """Print the verdict line of a compare tool's ``rows`` (the model ``precision.mma`` uses;
    the tool's other models are comparisons, not verdicts); the exit status: 0 when every
    output matches, else 1."""
    n, m = sum(r.outputs for r in rows), sum(r.matches for r in rows)
    if n == m:
        print("verdict: every output matches precision.mma")
        return 0
    print(f"verdict: {n - m} of {n} outputs differ from precision.mma's model (exit status 1)")
    return 1


def _family_of(d: Path) -> str | None:
    """Which family a directory of recordings holds, from its manifest (``ValueError`` naming
    a manifest that is no JSON object); None without a manifest or one of no family."""
    from precision.probe.capture import read_manifest

    manifest = read_manifest(d)
    return None if manifest is None else family_of(manifest)


def family_of(manifest: dict) -> str | None:
    """Which of :data:`FAMILIES` a recorder's manifest describes (its ``description``, which
    every recorder writes), or None (a hand-made manifest)."""
    text = str(manifest.get("description", ""))
    if "fragment-packed" in text:
        return "mma"
    if "WMMA" in text:
        return "wmma"
    if "extras" in text:
        return "wgmma_extra"
    if "wgmma" in text:
        return "wgmma"
    if "mma.sync" in text:
        return "mma_sync"
    return None


#: What ``precision verify`` reads, for its error messages.
EXPECTED = (
    "expected a recording directory made by precision capture, one family's directory such "
    "as tests/data/sm90, or one .npz recording inside such a directory"
)


def listed_files(d: Path, family: str) -> set[str] | None:
    """The ``.npz`` files the manifest of ``d`` lists as recorded (None where it lists none:
    a hand-made directory); an instruction marked ``"recorded": false`` has no file."""
    from precision.probe.capture import read_manifest

    manifest = read_manifest(d) or {}
    instructions = manifest.get("instructions")
    if not isinstance(instructions, dict) or not instructions:
        return None
    stem = "wgmma_{}" if family in ("wgmma", "wgmma_extra") else "{}"
    return {
        str(entry.get("file", f"{stem.format(name)}.npz"))
        if isinstance(entry, dict)
        else f"{stem.format(name)}.npz"
        for name, entry in instructions.items()
        if not (isinstance(entry, dict) and entry.get("recorded") is False)
    }


def known_files(family: str) -> frozenset[str]:
    """The ``.npz`` file names that ``family``'s reader replays (it knows no other file)."""
    if family == "mma_sync":
        from precision.probe.catalog import PROBES as MMA_SYNC

        return frozenset(f"{n}.npz" for n in MMA_SYNC)
    if family == "mma":
        from precision.probe.generic import PROBES as PACKED

        return frozenset(f"{p.name}.npz" for p in PACKED)
    if family == "wmma":
        from precision.probe.wmma import PROBES as WMMA

        return frozenset(f"{p.name}.npz" for p in WMMA)
    from precision.probe.wgmma import EXTRA, WGMMA

    if family in ("wgmma", "wgmma_extra"):
        return frozenset(f"wgmma_{n}.npz" for n in (EXTRA if family == "wgmma_extra" else WGMMA))
    raise ValueError(f"no probe family {family!r} (known: {', '.join(FAMILIES)})")


def check_unknown(d: Path, family: str, names: set[str] | None = None) -> None:
    """``ValueError`` naming the manifest of ``d`` when it lists (of ``names``, if given) a
    file that ``family``'s reader does not know how to replay: such a file (another family's
    recording appended to this directory, say) would be skipped, not counted."""
    listed = listed_files(d, family) or set()
    unknown = sorted((listed if names is None else listed & names) - known_files(family))
    if unknown:
        raise ValueError(
            f"{d / 'manifest.json'} lists {len(unknown)} file(s) that the {family} family's "
            f"replay does not know: {', '.join(unknown)} (another family's recordings? each "
            "family keeps its own directory)"
        )


def check_listed(d: Path, family: str) -> None:
    """``ValueError`` when the ``.npz`` files of ``d`` are not those its manifest lists: a
    file it lists that ``family``'s reader does not replay (:func:`check_unknown`), a
    recording it lists is missing (its outputs would silently drop out of the table), or a
    file it does not list is there (it would not be replayed, or not be what the manifest
    describes)."""
    listed = listed_files(d, family)
    if listed is None:
        return
    check_unknown(d, family)
    present = {p.name for p in d.glob("*.npz")}
    missing, unlisted = sorted(listed - present), sorted(present - listed)
    if missing:
        raise ValueError(
            f"{d}: {len(missing)} recording(s) that {d / 'manifest.json'} lists are missing: "
            f"{', '.join(missing)}"
        )
    if unlisted:
        raise ValueError(
            f"{d}: {len(unlisted)} .npz file(s) that {d / 'manifest.json'} does not list: "
            f"{', '.join(unlisted)} (not a recording of this {family} directory: move it away)"
        )


def check_family_dir(d: Path, families: tuple[str, ...]) -> None:
    """For a family's own tool (``python -m precision.probe.wmma compare DIR`` and the like):
    ``ValueError`` when the manifest of ``d`` describes another family, or when its ``.npz``
    files are not those it lists (:func:`check_listed`, as ``precision verify`` checks). A
    manifest of no family (hand-made) is checked as one of ``families[0]``'s where that is
    the only one; nothing is checked without a manifest."""
    family = _family_of(d)
    if family is None:
        if len(families) == 1:
            check_listed(d, families[0])
        return
    if family not in families:
        raise ValueError(
            f"{d / 'manifest.json'}: describes {family} recordings, not "
            f"{' or '.join(families)} ones (precision verify {d} replays every family)"
        )
    check_listed(d, family)


def _verify_family(
    d: Path, family: str | None, device: str, only: set[str] | None = None
) -> list[Row]:
    """Rows of the recordings of ``family`` in directory ``d`` (of the files named in
    ``only``, if given)."""
    if family == "mma_sync":
        paths = [d] if only is None else [d / name for name in sorted(only)]
        return [row for p in paths for row in _verify_mma_sync(p, device)]
    if family == "mma":
        return _verify_mma(d, device, only)
    if family == "wmma":
        return _verify_wmma(d, device, only)
    if family in ("wgmma", "wgmma_extra"):
        return _verify_wgmma(d, family == "wgmma_extra", device, only)
    return []


def _verify_file(f: Path, device: str) -> list[Row]:
    """Rows of one ``.npz`` recording, of the family its directory's manifest names (a file
    named after a hand-written mma.sync probe also without a manifest)."""
    from precision.probe.catalog import PROBES

    family = _family_of(f.parent)
    if family is None and f.suffix == ".npz" and f.stem in PROBES:
        family = "mma_sync"
    if f.suffix != ".npz" or family is None:
        raise ValueError(f"{f}: not a recording ({EXPECTED})")
    if family == "mma_sync":
        if f.stem not in PROBES:
            raise ValueError(
                f"{f}: not a recording of the mma_sync family of {f.parent} "
                f"(expected one of {', '.join(f'{n}.npz' for n in PROBES)})"
            )
        return _verify_mma_sync(f, device)
    # the family's reader, in the file's own directory (its manifest: the GPU's model), told
    # to read this file alone: its errors name the file as given
    rows = _verify_family(f.parent, family, device, only={f.name})
    if not rows:
        raise ValueError(
            f"{f}: not a recording of the {family} family of {f.parent} "
            f"(expected one of the .npz files its manifest.json lists)"
        )
    return rows


def _refuse_uncountable(d: Path) -> None:
    """``ValueError`` naming ``d`` when it holds ``.npz`` files but no manifest of a probe
    family: their family (hence how to replay them) is unknown, and a table without them
    would read as complete."""
    npz = sorted(p.name for p in d.glob("*.npz"))
    if not npz:
        return
    shown = ", ".join(npz[:3]) + (", ..." if len(npz) > 3 else "")
    why = (
        "a manifest.json of no probe family (no recorder's description)"
        if (d / "manifest.json").is_file()
        else "no manifest.json"
    )
    raise ValueError(
        f"{d}: holds {len(npz)} .npz file(s) ({shown}) but {why}: which probe family they "
        "record is unknown, so they cannot be counted (verify reads the directories a probe "
        "recorder writes, each with its manifest.json)"
    )


def verify_dir(path: str | Path, device: str = "cpu") -> list[Row]:
    """Match rows for every recording under ``path`` (see the module docstring).

    ``path`` is a capture directory, one family's directory, or one ``.npz`` recording inside
    a family's directory (its family read from that directory's manifest).
    ``ValueError`` naming the directory or file for anything that cannot be counted in full:
    a directory (``path`` or a sub-directory) holding ``.npz`` files but no manifest of a
    probe family, a manifest listing a file that is missing or that its family's reader
    does not replay, an ``.npz`` file it does not list (:func:`check_listed`), an unreadable
    recording.
    ``device="gpu"`` replays through ``precision.mma``'s GPU engine instead of the CPU
    engine. Recordings that only a CPU model replays (WMMA's integer, single-bit and f64
    probes, checked against exact integer models and the f64 FMA chain) are still verified,
    on the CPU, and their rows say so in ``note``.
    """
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such recording directory ({EXPECTED})")
    if not root.is_dir():
        return _verify_file(root, device)
    rows: list[Row] = []
    for d in [root] + sorted(p for p in root.iterdir() if p.is_dir()):
        family = _family_of(d)
        if family is None:
            _refuse_uncountable(d)  # .npz files of no known family would not be counted
            continue
        check_listed(d, family)
        rows += _verify_family(d, family, device)
    if not rows:
        raise ValueError(
            f"{root}: no recordings found (no manifest.json of a probe family with its .npz "
            f"files; {EXPECTED})"
        )
    return rows


def format_rows(rows: list[Row]) -> str:
    """The match table as text, a total last."""
    head = f"{'family':<12} {'instruction':<38} {'kind':<14} {'outputs':>9} {'match':>9} {'%':>8}"
    lines = [head]
    for r in rows:
        note = f"  ({r.note})" if r.note else ""
        lines.append(
            f"{r.family:<12} {r.instruction:<38} {r.kind:<14} {r.outputs:>9} {r.matches:>9} "
            f"{r.percent:>8.3f}{note}"
        )
    n = sum(r.outputs for r in rows)
    m = sum(r.matches for r in rows)
    lines.append(f"{'total':<66} {n:>9} {m:>9} {100.0 * m / max(n, 1):>8.3f}")
    return "\n".join(lines)
