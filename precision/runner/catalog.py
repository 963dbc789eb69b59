"""What the runner can sweep over: the valid names of every sweep axis, read from the library.

The names are not repeated here: methods and backends come from :mod:`precision.gemm`, formats
from :mod:`precision.formats`, architectures from :mod:`precision.tensorcore` and distributions
from :mod:`precision.distributions`. Everything is imported lazily (no CuPy at import time).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Catalog:
    """Valid values of each sweep axis (canonical spellings) and backend availability."""

    methods: tuple[str, ...]
    formats: tuple[str, ...]
    format_aliases: dict[str, str]
    backends: tuple[str, ...]
    archs: tuple[str, ...]
    corrections: tuple[str, ...]
    distributions: tuple[str, ...]

    def canonical_format(self, name: str) -> str | None:
        """The canonical name of format ``name`` (any name :func:`precision.formats.get_format`
        accepts: canonical, alias or PTX spelling, case-insensitive), else None."""
        from precision.formats import get_format

        try:
            canon = get_format(name).name
        except ValueError:
            return None
        return canon if canon in self.formats else None


def load_catalog() -> Catalog:
    """Read the valid axis values from the library modules."""
    from precision import distributions, formats, gemm, tensorcore

    aliases = {alias: formats.get_format(alias).name for alias in formats.ALIASES}
    return Catalog(
        methods=tuple(gemm.METHODS),
        formats=tuple(formats.FORMATS),
        format_aliases=aliases,
        backends=tuple(gemm.BACKENDS),
        archs=tuple(tensorcore.ARCHS),
        corrections=tuple(gemm.CORRECTIONS),
        distributions=tuple(distributions.DISTRIBUTIONS),
    )


def backend_availability() -> dict[str, str | None]:
    """``{backend: None if usable here else the reason}`` from :mod:`precision.gemm`."""
    from precision.gemm import available_backends

    return dict(available_backends())
