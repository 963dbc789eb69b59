"""Adding a later recording run to a directory of probe recordings, provenance kept per run.

A recorder (``python -m precision.probe.packed record``, ``python -m precision.probe.wgmma
record --extra``) writes one run: its ``.npz`` files and a ``manifest.json`` whose top level
describes that run (GPU, driver, commit, kernel source sha256, seed, ptxas verdicts, SASS) and
whose ``instructions`` lists what it recorded. Recording more instructions later (``--only``)
into a fresh directory and then :func:`append_run` into the committed one keeps both:

- the destination's top level stays the first run's record, untouched;
- the later run's top level (everything but ``instructions``) becomes
  ``later_runs[i]``, and each of its instructions enters ``instructions`` with
  ``"run": "later_runs[i]"``;
- its ``.npz`` files are copied next to the others.

Nothing is overwritten: an instruction or file the destination already has is an error, and
so is a file of the later run that its manifest does not name (or the reverse). Only a run of
the same kind joins: one directory is replayed as one probe family (the manifests'
``description``) through one GPU's model (their ``compute_capability``, sm_90 where absent),
so a run of another family or another compute capability is refused.

    python -m precision.probe.manifests append LATER_DIR tests/data/sm90_mma
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from precision.console import run_main
from precision.probe.capture import MANIFEST, manifest_compute_capability, read_manifest


def check_new_run(out_dir: str | Path, only: list[str] | None, valid: list[str]) -> None:
    """Before a recorder starts: ValueError when ``out_dir`` already holds a run (its
    ``manifest.json`` would be replaced: record into a new directory and :func:`append_run`),
    or ``only`` is empty or names something not in ``valid``."""
    if (Path(out_dir) / MANIFEST).exists():
        raise ValueError(
            f"{Path(out_dir) / MANIFEST} exists: record into a new directory, then "
            "python -m precision.probe.manifests append NEW_DIR " + str(out_dir)
        )
    if only is not None:
        unknown = [n for n in only if n not in valid]
        if not only or unknown:
            raise ValueError(
                f"--only: {'unknown ' + ', '.join(unknown) if unknown else 'no name given'}; "
                f"valid: {', '.join(valid)}"
            )


def _read(directory: Path) -> dict[str, Any]:
    """The manifest of a recorder's output directory (:func:`~precision.probe.capture.
    read_manifest`), ``ValueError`` naming it when it is missing or has no ``instructions``."""
    manifest = read_manifest(directory)
    path = directory / MANIFEST
    if manifest is None:
        raise ValueError(f"{path}: no such file (expected a recorder's output directory)")
    if not isinstance(manifest.get("instructions"), dict):
        raise ValueError(f"{path}: expected an object with an 'instructions' object")
    return manifest


def recorded_files(manifest: dict[str, Any]) -> dict[str, str]:
    """{instruction: file name} of a manifest's recorded instructions: the entry's ``file``
    (wgmma extras) or ``<instruction>.npz`` (packed probes); entries with
    ``"recorded": false`` (a failed layout check) have no file."""
    return {
        name: str(entry.get("file", f"{name}.npz"))
        for name, entry in manifest["instructions"].items()
        if entry.get("recorded", True)
    }


def check_same_kind(src: Path, new: dict[str, Any], dst: Path, old: dict[str, Any]) -> None:
    """``ValueError`` naming both manifests when the run of ``new`` (in ``src``) would not be
    replayed as the recordings of ``old`` (in ``dst``) are: another probe family (the
    ``description`` that :func:`precision.probe.suite.family_of` reads: its files would not
    be replayed at all) or another compute capability (the one model
    :func:`~precision.probe.capture.manifest_arch` picks for the directory would be another
    GPU's)."""
    from precision.probe.suite import family_of

    families = family_of(new), family_of(old)
    if families[0] != families[1]:
        what = [f"the {f} family" if f else "no known probe family" for f in families]
        raise ValueError(
            f"{src / MANIFEST}: a run of {what[0]}, but {dst / MANIFEST} holds {what[1]}: "
            "a directory is replayed as one family (append to that family's directory)"
        )
    ccs = (
        manifest_compute_capability(src / MANIFEST, new),
        manifest_compute_capability(dst / MANIFEST, old),
    )
    if ccs[0] != ccs[1]:
        raise ValueError(
            f"{src / MANIFEST}: compute_capability {ccs[0]}, but {dst / MANIFEST} has "
            f"{ccs[1]}: a directory is replayed through one GPU's model (keep another GPU's "
            "run in a directory of its own)"
        )


def append_run(later: str | Path, into: str | Path) -> dict[str, Any]:
    """Append the run recorded in directory ``later`` to the recordings in ``into`` (see the
    module docstring); returns the merged manifest, also written to ``into``. Raises
    ValueError, naming the file, before anything is written when the two do not fit: another
    probe family or compute capability (:func:`check_same_kind`), files and manifest that
    disagree, an instruction or file ``into`` already has."""
    src, dst = Path(later), Path(into)
    new, old = _read(src), _read(dst)
    check_same_kind(src, new, dst, old)
    files = recorded_files(new)
    on_disk = {p.name for p in src.glob("*.npz")}
    if on_disk != set(files.values()):
        extra = sorted(on_disk - set(files.values()))
        missing = sorted(set(files.values()) - on_disk)
        raise ValueError(
            f"{src / MANIFEST}: names {len(files)} file(s), the directory holds {len(on_disk)}"
            + (f"; not named: {', '.join(extra)}" if extra else "")
            + (f"; missing: {', '.join(missing)}" if missing else "")
        )
    clash = sorted(set(new["instructions"]) & set(old["instructions"]))
    clash += sorted(f for f in files.values() if (dst / f).exists())
    if clash:
        raise ValueError(f"{dst}: already holds {', '.join(clash)} (nothing is overwritten)")
    later_runs = list(old.get("later_runs", []))
    run_key = f"later_runs[{len(later_runs)}]"
    later_runs.append({k: v for k, v in new.items() if k != "instructions"})
    merged = dict(old)
    merged["instructions"] = {
        **old["instructions"],
        **{name: {**entry, "run": run_key} for name, entry in new["instructions"].items()},
    }
    merged["later_runs"] = later_runs
    for f in files.values():
        shutil.copyfile(src / f, dst / f)
    text = json.dumps(merged, indent=1, default=str)
    (dst / MANIFEST).write_text(text + "\n")
    return merged


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m precision.probe.manifests", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    a = sub.add_parser("append", help="append a later run's recordings to a directory")
    a.add_argument("later", help="the later run's directory (a recorder's output)")
    a.add_argument("into", help="the directory of recordings to extend, e.g. tests/data/sm90_mma")
    args = ap.parse_args(argv)
    try:
        merged = append_run(args.later, args.into)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"{args.into}: {len(merged['instructions'])} instructions, "
        f"{len(merged['later_runs'])} later run(s)"
    )
    return 0


if __name__ == "__main__":
    run_main(main)
