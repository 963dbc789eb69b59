"""``precision list``: its table of valid combinations says exactly what a config may name.

The table is parsed back into (method, backend, format, arch, correction) tuples and compared
with the config validator (:func:`precision.runner.config.parse_config`) over the full product
of every axis, so a misleading row (e.g. archs that read as applying to a format they do not
restrict) fails here; the rows an emulator or numpy backend runs are also run through
:func:`precision.gemm.gemm`.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from precision.gemm import gemm
from precision.runner import catalog
from precision.runner.cli import main
from precision.runner.config import REFERENCES, ConfigError, parse_config

UNAVAILABLE = {"cuda": "no GPU (test)", "cublas": "no GPU (test)"}


@pytest.fixture
def listed(monkeypatch, capsys) -> str:
    """The output of ``precision list`` with cuda and cublas unavailable."""
    avail = {b: UNAVAILABLE.get(b) for b in catalog.load_catalog().backends}
    monkeypatch.setattr(catalog, "backend_availability", lambda: avail)
    assert main(["list"]) == 0
    return capsys.readouterr().out


def parse_table(out: str, cat: catalog.Catalog) -> tuple[set[tuple], dict[str, set[str]]]:
    """The (method, backend, format, arch, correction) tuples the combinations table allows
    (correction None for methods other than "corrected"), and the notes of each backend."""
    lines = out.split("valid combinations")[1].splitlines()
    header = next(
        i
        for i, line in enumerate(lines)
        if line.split() == ["method", "backend", "formats", "archs"]
    )
    allowed: set[tuple] = set()
    notes: dict[str, set[str]] = {}
    for line in lines[header + 1 :]:
        m = re.fullmatch(
            r"  (\S+) +(\S+) +(\S+(?:, \S+)*) +(all|\S+(?:, \S+)*)(?:  \((.*)\))?", line
        )
        assert m, f"unparsable row: {line!r}"
        method, backend, formats, archs, note = m.groups()
        note_parts = set(note.split("; ")) if note else set()
        notes.setdefault(backend, set()).update(note_parts)
        only = [n for n in note_parts if n.startswith("correction: ")]
        corrections: tuple = (None,)
        if method == "corrected":
            corrections = (
                tuple(only[0].removeprefix("correction: ").removesuffix(" only").split(", "))
                if only
                else cat.corrections
            )
        arch_list = cat.archs if archs == "all" else tuple(archs.split(", "))
        assert set(arch_list) <= set(cat.archs)
        for fmt, arch, corr in itertools.product(formats.split(", "), arch_list, corrections):
            key = (method, backend, fmt, arch, corr)
            assert key not in allowed, f"{key} listed twice"
            allowed.add(key)
    return allowed, notes


def validator_accepts(method: str, backend: str, fmt: str, arch: str, corr: str | None) -> bool:
    """Whether a config sweeping just this combination passes validation."""
    correction = f'correction = ["{corr}"]\n' if corr else ""
    text = (
        'name = "x"\n[sweep]\nsize = [8]\ndistribution = ["uniform"]\n'
        f'method = ["{method}"]\nformat = ["{fmt}"]\nbackend = ["{backend}"]\n'
        f'arch = ["{arch}"]\n{correction}'
    )
    try:
        parse_config(text, "c.toml")
    except ConfigError:
        return False
    return True


def test_table_matches_the_config_validator_exactly(listed):
    cat = catalog.load_catalog()
    allowed, _ = parse_table(listed, cat)
    accepted = {
        (m, b, f, a, c)
        for m, b, f, a in itertools.product(cat.methods, cat.backends, cat.formats, cat.archs)
        for c in (cat.corrections if m == "corrected" else (None,))
        if validator_accepts(m, b, f, a, c)
    }
    assert allowed == accepted


def test_references_line_lists_exactly_what_the_validator_accepts(listed):
    """Every reference a config may name is listed (exact_dd too), and each listed one passes."""
    (line,) = [ln for ln in listed.splitlines() if ln.startswith("references:")]
    shown = line.removeprefix("references:").strip().split(", ")
    assert shown == list(REFERENCES)
    assert "exact_dd" in shown  # configs/ozaki.toml uses it
    base = 'name = "x"\n{}[sweep]\nsize = [8]\ndistribution = ["uniform"]\n'
    base += 'method = ["plain"]\nformat = ["fp16"]\n'
    for ref in shown:
        assert parse_config(base.format(f'reference = "{ref}"\n'), "c.toml").reference == ref
    with pytest.raises(ConfigError, match="unknown reference"):
        parse_config(base.format('reference = "fp128"\n'), "c.toml")


def test_unrestricted_formats_read_all_archs_and_restricted_ones_list_their_own(listed):
    """The newcomer's case: fp16 runs on every arch, tf32 and bf16 on sm80 and later only."""
    cat = catalog.load_catalog()
    allowed, _ = parse_table(listed, cat)
    for arch in cat.archs:
        assert ("plain", "emulator", "fp16", arch, None) in allowed
    tf32_archs = {a for m, b, f, a, _ in allowed if (m, b, f) == ("plain", "emulator", "tf32")}
    assert tf32_archs == {"sm90", "sm100", "sm89", "sm80"}
    row = re.compile(r"  plain +emulator +(.*?fp16.*?)  +(\S.*)")
    (match,) = filter(None, map(row.fullmatch, listed.splitlines()))
    assert match.group(2) == "all"
    assert "tf32" not in match.group(1) and "bf16" not in match.group(1)


def test_corrections_and_unavailable_backends_are_noted(listed):
    cat = catalog.load_catalog()
    allowed, notes = parse_table(listed, cat)
    assert {c for m, b, *_, c in allowed if (m, b) == ("corrected", "cublas")} == {"ootomo"}
    assert {b for b, n in notes.items() if "not on this machine" in n} == set(UNAVAILABLE)


def test_listed_cpu_combinations_run_in_gemm(listed):
    """What the table allows on the emulator and numpy backends, gemm computes (a 4x32x4
    product, finite)."""
    cat = catalog.load_catalog()
    allowed, _ = parse_table(listed, cat)
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((4, 32)), rng.standard_normal((32, 4))
    ran: set[tuple[str, str]] = set()
    for method, backend, fmt, arch, corr in sorted(allowed, key=str):
        if backend not in ("emulator", "numpy"):
            continue
        kwargs = {"correction": corr} if corr else {}
        D = gemm(A, B, method=method, fmt=fmt, backend=backend, arch=arch, **kwargs)
        assert D.shape == (4, 4) and np.isfinite(D).all(), (method, backend, fmt, arch)
        ran.add((method, backend))
    # the loop is not vacuous: every CPU method and both CPU backends were run
    cpu_methods = {m for m, b, *_ in allowed if b in ("emulator", "numpy")}
    assert {b for _, b in ran} == {"emulator", "numpy"}
    assert {m for m, _ in ran} == cpu_methods >= {"plain", "corrected", "satf"}


def test_list_says_how_many_instructions_of_each_arch_replay_hardware_outputs(listed):
    """Counted from the evidence strings: a backed instruction names a file that exists in
    tests/data; sm75 has no recorded or published outputs at all, so none."""
    from pathlib import Path

    from precision.tensorcore import ARCHS

    root = Path(__file__).parents[2]
    for name, model in ARCHS.items():
        backed = model.hardware_backed()
        for ins in backed:
            paths = [w.strip(",;:()") for w in ins.evidence.split() if "tests/data/" in w]
            assert paths and all((root / p).exists() for p in paths), (name, ins.evidence)
        assert f"{name} {len(backed)}/{len(model.all_instructions())}" in listed
    assert ARCHS["sm75"].hardware_backed() == [] and len(ARCHS["sm90"].hardware_backed()) > 30
