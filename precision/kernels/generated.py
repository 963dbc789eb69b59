"""Every generated source of the package, regenerated from its generator in memory.

    python -m precision.kernels.generated            # rewrite the generated files
    python -m precision.kernels.generated --check    # exit 1 naming each stale file

``--check`` (run by ``.ci/run``) compares each committed file byte for byte with its
generator's output and writes nothing. The generated sources: ``kernels/wgmma_ops.cuh`` (from
:mod:`precision.kernels.gen_wgmma_ops`) and ``probe/cuda/mma_probes.cu`` (from
:mod:`precision.probe.gen_kernels`); a new generator is one more entry in :data:`GENERATED`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from precision.console import run_main
from precision.kernels import gen_wgmma_ops

KERNEL_DIR = Path(__file__).resolve().parent


def _probe_kernels() -> str:
    # Imported here: the probe package builds on precision.kernels, not the other way round.
    from precision.probe.gen_kernels import generate

    return generate()


#: generated file -> (generator module, function returning the file's text)
GENERATED: dict[Path, tuple[str, Callable[[], str]]] = {
    KERNEL_DIR / "wgmma_ops.cuh": ("precision.kernels.gen_wgmma_ops", gen_wgmma_ops.generate),
    KERNEL_DIR.parent / "probe" / "cuda" / "mma_probes.cu": (
        "precision.kernels.generated",
        _probe_kernels,
    ),
}


def stale(files: dict[Path, tuple[str, Callable[[], str]]] | None = None) -> list[str]:
    """One message per generated file that is missing or differs from its generator's output
    (empty list: all up to date). Writes nothing."""
    out = []
    for path, (generator, generate) in (files or GENERATED).items():
        expected = generate()
        if not path.is_file():
            out.append(f"{path}: missing; run `python -m {generator}` (or {__name__})")
            continue
        got = path.read_text()
        if got != expected:
            got_lines, exp_lines = got.splitlines(), expected.splitlines()
            first = next(
                (i for i, (g, e) in enumerate(zip(got_lines, exp_lines, strict=False)) if g != e),
                min(len(got_lines), len(exp_lines)),
            )
            out.append(
                f"{path}: differs from the output of {generator} (first at line {first + 1}; "
                f"{len(got_lines)} lines committed, {len(exp_lines)} generated); regenerate with "
                f"`python -m {__name__}` and commit the result"
            )
    return out


def write_all(files: dict[Path, tuple[str, Callable[[], str]]] | None = None) -> list[Path]:
    """Rewrite every generated file whose text differs from its generator's output; returns
    the paths written."""
    written = []
    for path, (_, generate) in (files or GENERATED).items():
        text = generate()
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """CLI: ``--check`` exits 1 with one line per stale file; otherwise rewrites them."""
    p = argparse.ArgumentParser(
        prog="python -m precision.kernels.generated", description=__doc__.splitlines()[0]
    )
    p.add_argument("--check", action="store_true", help="compare only; exit 1 if any differs")
    args = p.parse_args(argv)
    if args.check:
        problems = stale()
        for msg in problems:
            print(msg, file=sys.stderr)
        if not problems:
            print(f"{len(GENERATED)} generated source(s) match their generators")
        return 1 if problems else 0
    written = write_all()
    for path in written:
        print(f"wrote {path}")
    if not written:
        print(f"{len(GENERATED)} generated source(s) already up to date")
    return 0


if __name__ == "__main__":
    run_main(main)
