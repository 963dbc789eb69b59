"""What the runner can sweep over: the valid names of every sweep axis, read from the library.

The names are not repeated here: methods and backends come from :mod:`precision.gemm`, formats
from :mod:`precision.formats`, architectures from :mod:`precision.tensorcore` and distributions
from :mod:`precision.distributions`. Everything is imported lazily (no CuPy at import time).
"""

from __future__ import annotations

from dataclasses import dataclass

from precision.gemm.api import CPU_BASELINES, OZAKI_METHODS

#: THE table of valid combinations: the formats each (method, backend) runs. A sweep point
#: whose (method, backend) is absent, or whose format is not listed, is refused when the
#: config is validated (before anything is written). Extend it where the library gains a
#: method.
SUPPORTED_FORMATS: dict[tuple[str, str], tuple[str, ...]] = {
    ("plain", "emulator"): ("tf32", "fp16", "bf16", "e4m3", "e5m2", "int8"),
    ("satf", "emulator"): ("tf32", "fp16", "bf16", "e4m3", "e5m2", "int8"),
    ("corrected", "emulator"): ("tf32", "fp16", "bf16"),  # hi/lo split (schedule.LO_SCALE_LOG2)
    ("plain", "cuda"): ("tf32", "fp16", "bf16", "e4m3", "e5m2", "int8"),
    ("satf", "cuda"): ("tf32", "fp16", "bf16", "e4m3", "e5m2", "int8"),
    ("corrected", "cuda"): ("tf32", "fp16", "bf16"),
    # gemm.api.CUBLAS_MODES, plus fp64: native DGEMM (gemm.api.cublas_dgemm)
    ("plain", "cublas"): ("fp32", "tf32", "fp16", "bf16", "fp64"),
    ("corrected", "cublas"): ("fp16",),
    # Ozaki schemes I and II (precision.gemm.ozaki): float64/float32 inputs, integer (or fp16)
    # tensor-core pieces, the result rounded once to the sweep's `target` (fp64 or fp32).
    ("ozaki1", "emulator"): ("int8", "fp16"),
    ("ozaki2", "emulator"): ("int8",),
    ("ozaki1", "cuda"): ("int8", "fp16"),  # precision.gemm.ozaki1_cuda (ozaki1.cu + cuBLAS)
    ("ozaki2", "cuda"): ("int8",),  # precision.gemm.ozaki_cuda
}
# The CPU fp32/fp64 baselines (gemm.api.CPU_BASELINES): the exact fp32 FMA chain on the
# emulator, numpy's float32/float64 matmul on the numpy backend.
for _method, _fmt, _backend in CPU_BASELINES:
    SUPPORTED_FORMATS[(_method, _backend)] = (
        *SUPPORTED_FORMATS.get((_method, _backend), ()),
        _fmt,
    )
#: Corrections a (method, backend) supports, where not every one is.
SUPPORTED_CORRECTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("corrected", "cublas"): ("ootomo",),
}
#: Architectures a backend runs, where not every one is: our CUDA kernels are built for sm90.
#: The emulator runs a format on an arch whose tensor-core model has an instruction for it
#: (precision.tensorcore.ARCHS); cuBLAS runs on the GPU at hand (``arch`` is not used).
SUPPORTED_ARCHS: dict[str, tuple[str, ...]] = {"cuda": ("sm90",)}
#: Formats computed without tensor-core instructions (an FMA-chain baseline), to which the
#: emulator's arch-model check does not apply.
NON_TENSOR_CORE_FORMATS: tuple[str, ...] = ("fp32", "fp64")
#: Methods that take the sweep axes ``terms`` (slices / moduli, or "auto") and ``target``
#: (the format the result is rounded to): the Ozaki schemes. Their valid ``terms`` ranges and
#: targets come from :mod:`precision.gemm.ozaki` (TERMS_RANGE, TARGETS).
TERMS_METHODS: tuple[str, ...] = OZAKI_METHODS


def combination_problem(
    method: str, fmt: str, backend: str, arch: str, correction: str | None = None
) -> str | None:
    """None if the library runs this combination, else why not (one sentence for the user).

    ``fmt`` is a canonical format name. Validity is read from :data:`SUPPORTED_FORMATS`,
    :data:`SUPPORTED_CORRECTIONS`, :data:`SUPPORTED_ARCHS` and the arch models
    (:func:`precision.tensorcore.arch.format_problem`, which ``gemm`` uses too); a run never
    reaches a combination this refuses.
    """
    formats = SUPPORTED_FORMATS.get((method, backend))
    if formats is None:
        pairs = sorted(b for m, b in SUPPORTED_FORMATS if m == method)
        return (
            f"method {method!r} does not run on backend {backend!r} (it runs on: "
            + (", ".join(pairs) or "none")
            + ")"
        )
    if fmt not in formats:
        return (
            f"method {method!r} on backend {backend!r} does not support format {fmt!r} "
            f"(supported: {', '.join(formats)})"
        )
    corrections = SUPPORTED_CORRECTIONS.get((method, backend))
    if correction is not None and corrections is not None and correction not in corrections:
        return (
            f"method {method!r} on backend {backend!r} does not support correction "
            f"{correction!r} (supported: {', '.join(corrections)})"
        )
    archs = SUPPORTED_ARCHS.get(backend)
    if archs is not None and arch not in archs:
        return f"backend {backend!r} runs arch {', '.join(archs)} only, not {arch!r}"
    if backend == "emulator" and fmt not in NON_TENSOR_CORE_FORMATS:
        from precision.tensorcore import ARCHS
        from precision.tensorcore.arch import format_problem

        if arch in ARCHS:  # (an arch without a model is the config validator's to name)
            return format_problem(arch, fmt)
    return None


def valid_combinations(catalog: Catalog) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """``(method, backend, format, archs)`` for every supported method/backend/format, with
    the archs it runs on (canonical names, in catalog order)."""
    out = []
    for method in catalog.methods:
        for backend in catalog.backends:
            for fmt in catalog.formats:
                archs = tuple(
                    a for a in catalog.archs if combination_problem(method, fmt, backend, a) is None
                )
                if archs:
                    out.append((method, backend, fmt, archs))
    return out


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
        methods=tuple(gemm.METHODS) + tuple(m for m in OZAKI_METHODS if m not in gemm.METHODS),
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
