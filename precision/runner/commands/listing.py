"""``precision list``: the methods, formats, distributions and backends a config may name.

The table of valid combinations is read off :func:`precision.runner.catalog.combination_problem`,
the same check the config validator applies, so what it prints is exactly what a config may
name: each row gives some formats of one method x backend and the archs every one of them runs
on ("all": every arch), e.g.::

    method     backend   formats  archs
    plain      emulator  fp32     all
    plain      emulator  tf32     sm90, sm100, sm89, sm80
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from precision.runner import catalog
from precision.runner.config import REFERENCES

#: Shown in the archs column for a format that runs on every arch of the catalog.
ALL_ARCHS = "all"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``list`` sub-command."""
    p = subparsers.add_parser(
        "list",
        help="list sweep axis values (methods, formats, distributions, backends) and the "
        "table of valid method x format x backend x arch combinations",
        description="List the values each [sweep] axis accepts, which backends can run "
        "on this machine (with the reason when one cannot), and the valid method x backend x "
        "format x arch combinations.",
    )
    p.set_defaults(func=main)


@dataclass(frozen=True)
class CombinationRow:
    """Formats of one method x backend that run on the same archs (and corrections)."""

    method: str
    backend: str
    formats: tuple[str, ...]
    #: the archs each of :attr:`formats` runs on, in catalog order
    archs: tuple[str, ...]
    #: the corrections they accept, where that is not every correction (method "corrected");
    #: None when unrestricted or not applicable
    corrections: tuple[str, ...] | None = None


def _corrections(
    cat: catalog.Catalog, method: str, backend: str, fmt: str, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """The corrections ``method`` x ``backend`` x ``fmt`` accepts on every one of ``archs``,
    or None when it accepts them all (or the method takes no correction)."""
    if method != "corrected":  # the validator checks the correction of this method only
        return None
    ok = tuple(
        c
        for c in cat.corrections
        if all(catalog.combination_problem(method, fmt, backend, a, c) is None for a in archs)
    )
    return None if ok == cat.corrections else ok


def combination_rows(cat: catalog.Catalog) -> list[CombinationRow]:
    """The valid combinations of :func:`catalog.valid_combinations`, one row per method x
    backend x arch set (x corrections): formats that run on the same archs share a row, in
    catalog order of their first format."""
    rows: dict[tuple, list[str]] = {}
    for method, backend, fmt, archs in catalog.valid_combinations(cat):
        key = (method, backend, archs, _corrections(cat, method, backend, fmt, archs))
        rows.setdefault(key, []).append(fmt)
    return [
        CombinationRow(method, backend, tuple(fmts), archs, corrections)
        for (method, backend, archs, corrections), fmts in rows.items()
    ]


def format_combinations(
    rows: list[CombinationRow], all_archs: tuple[str, ...], availability: dict[str, str | None]
) -> list[str]:
    """The lines of the combinations table: a header, then one aligned line per row.

    The archs column reads :data:`ALL_ARCHS` where a row runs on every one of ``all_archs``;
    a row whose backend is unusable here (per ``availability``) ends in
    ``(not on this machine)``.
    """
    table = [("method", "backend", "formats", "archs")]
    notes = [""]
    for row in rows:
        archs = ALL_ARCHS if set(row.archs) == set(all_archs) else ", ".join(row.archs)
        table.append((row.method, row.backend, ", ".join(row.formats), archs))
        why = []
        if row.corrections is not None:
            why.append(f"correction: {', '.join(row.corrections)} only")
        if availability.get(row.backend) is not None:
            why.append("not on this machine")
        notes.append(f"  ({'; '.join(why)})" if why else "")
    widths = [max(len(cells[i]) for cells in table) for i in range(3)]  # the last: unpadded
    lines = []
    for (*padded, archs), note in zip(table, notes, strict=True):
        cols = [c.ljust(w) for c, w in zip(padded, widths, strict=True)]
        lines.append("  " + "  ".join([*cols, archs]) + note)
    return lines


def _evidence_line(archs: tuple[str, ...]) -> str:
    """How many instructions of each arch replay recorded hardware outputs."""
    from precision.tensorcore import ARCHS

    counts = ", ".join(
        f"{a} {len(ARCHS[a].hardware_backed())}/{len(ARCHS[a].all_instructions())}"
        for a in archs
        if a in ARCHS
    )
    return (
        f"instructions replaying recorded hardware outputs (tests/data): {counts}; the others "
        "follow the literature or exact arithmetic (docs/coverage.md)"
    )


def main(args: argparse.Namespace) -> int:
    """Print the catalog; return 0."""
    from precision.distributions import DISTRIBUTIONS

    cat = catalog.load_catalog()
    print("methods:       " + ", ".join(cat.methods))
    print("corrections:   " + ", ".join(cat.corrections) + "  (for method 'corrected')")
    aliases = ", ".join(f"{a}={c}" for a, c in sorted(cat.format_aliases.items()))
    print(
        "formats:       " + ", ".join(cat.formats) + (f"  (aliases: {aliases})" if aliases else "")
    )
    print("archs:         " + ", ".join(cat.archs))
    print("               " + _evidence_line(cat.archs))
    print("references:    " + ", ".join(REFERENCES))
    print("distributions:")
    for dist in DISTRIBUTIONS.values():
        params = ", ".join(f"{k}={v}" for k, v in dist.defaults.items())
        print(f"  {dist.name:<13} {dist.description}  [{params}]")
    availability = catalog.backend_availability()
    print("backends:")
    for name, reason in availability.items():
        print(f"  {name:<13} {'available' if reason is None else 'unavailable: ' + reason}")
    print(
        "valid combinations: each row's formats run with its method x backend on the archs "
        f"listed\n({ALL_ARCHS!r}: every arch above); a config naming any other combination is "
        "refused before it runs:"
    )
    for line in format_combinations(combination_rows(cat), cat.archs, availability):
        print(line)
    return 0
