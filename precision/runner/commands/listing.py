"""``precision list``: the methods, formats, distributions and backends a config may name."""

from __future__ import annotations

import argparse

from precision.runner import catalog


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``list`` sub-command."""
    p = subparsers.add_parser(
        "list",
        help="list sweep axis values (methods, formats, distributions, backends)",
        description="List the values each [sweep] axis accepts, which backends can run "
        "on this machine (with the reason when one cannot), and the valid method x backend x "
        "format x arch combinations.",
    )
    p.set_defaults(func=main)


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
    print("references:    exact, fp64")
    print("distributions:")
    for dist in DISTRIBUTIONS.values():
        params = ", ".join(f"{k}={v}" for k, v in dist.defaults.items())
        print(f"  {dist.name:<13} {dist.description}  [{params}]")
    availability = catalog.backend_availability()
    print("backends:")
    for name, reason in availability.items():
        print(f"  {name:<13} {'available' if reason is None else 'unavailable: ' + reason}")
    print("valid combinations (method x backend: formats [archs]); a config naming any other")
    print("is refused before it runs:")
    rows: dict[tuple[str, str], list[str]] = {}
    for method, backend, fmt, archs in catalog.valid_combinations(cat):
        label = fmt if archs == cat.archs else f"{fmt} [{', '.join(archs)}]"
        rows.setdefault((method, backend), []).append(label)
    for (method, backend), labels in rows.items():
        here = "" if availability.get(backend) is None else "  (not on this machine)"
        print(f"  {method:<10} x {backend:<9} {', '.join(labels)}{here}")
    return 0
