"""Compare ``precision.mma``'s pre-Hopper models with another model, dot product by dot product.

Where no hardware outputs exist (sm75, and the sm70/sm80/sm89 instructions absent from the
published files) the only check of an :class:`~precision.tensorcore.arch.ArchModel` is agreement
with an independently written model. This module draws random inputs per instruction, runs
``precision.mma`` and a second model on them, and counts bitwise matches; a disagreement is put
into the first class of :data:`CLASSES` whose input/output test it meets, so the remaining
differences can be read off one table and decided by evidence (docs/coverage.md, "Model
comparison").

The second model is MMA-Sim (PyPI ``mmasim``, MIT, needs torch; not a dependency of this
project), imported lazily by :func:`mmasim_model`. Any callable with the signature of
:data:`OtherModel` can stand in (the CPU test uses a fake one).

Inputs (raw bit patterns, one dot product of ``K = k`` terms per row, ``K`` the instruction's
inner dimension, so a chained instruction is one instruction): each row takes one of the regimes
of :data:`REGIMES`; together they cover every exponent field, subnormals, ±0, ±Inf, NaN
payloads, tf32's ignored low 13 bits, zero products next to huge partners, exact cancellation
and sums at the bottom of the output range.

Run: ``python -m precision.probe.model_compare sm80 [--n 100000] [--seed 0]`` in an environment
that has ``mmasim`` and ``torch`` (for example a separate venv with this project installed
without its dependencies, plus numpy and ml_dtypes).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from precision.console import run_main
from precision.formats import Format, get_format
from precision.probe.inputs import from_values
from precision.tensorcore.arch import Instruction, get_arch
from precision.tensorcore.chain import mma

#: ``other(instr, a_bits, b_bits, c_bits) -> d_bits``: rows of ``a``/``b`` bits ``[T, K]`` and
#: ``c`` bits ``[T]`` in the containers of the instruction's formats; returns ``d`` bits ``[T]``
#: in the container of its accumulator format.
OtherModel = Callable[[Instruction, np.ndarray, np.ndarray, np.ndarray], np.ndarray]

#: Row regimes of :func:`draw_inputs`, drawn with equal probability.
REGIMES = ("random_bits", "finite", "window", "tiny", "zero_partner", "cancel", "inf", "exp_floor")

#: MMA-Sim's architecture names.
MMASIM_ARCH = {
    "sm70": "Volta",
    "sm75": "Turing",
    "sm80": "Ampere",
    "sm89": "Ada Lovelace",
    "sm90": "Hopper",
    "sm100": "Blackwell",
}


def _fields(fmt: Format) -> tuple[int, int, int]:
    """(exponent-field bits, trailing-significand bits, bias) of a float format."""
    mbits = fmt.precision - 1
    ebits = fmt.bits - fmt.precision
    return ebits, mbits, 1 - fmt.emin


def _compose(fmt: Format, sign: np.ndarray, fld: np.ndarray, mant: np.ndarray) -> np.ndarray:
    lay = fmt.bit_layout
    u = np.uint64
    bits = (
        (sign.astype(u) << u(lay.sign_shift))
        | (fld.astype(u) << u(lay.exponent_shift))
        | (mant.astype(u) << u(lay.mantissa_shift))
    )
    return bits.astype(lay.uint)


def _random_container(fmt: Format, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Uniform bits over the whole container (tf32: the 13 ignored low bits too)."""
    uint = fmt.bit_layout.uint
    nbytes = np.dtype(uint).itemsize
    raw = rng.integers(0, 256, (*shape, nbytes), dtype=np.uint8)
    return raw.view(uint).reshape(shape)


def _finite_field(
    fmt: Format, lo: Any, hi: Any, rng: np.random.Generator, shape: Any
) -> np.ndarray:
    """Exponent fields uniform in [lo, hi], clipped to the finite range."""
    ebits, _, _ = _fields(fmt)
    top = (1 << ebits) - 1 if fmt.nan_encoding == "fn" else (1 << ebits) - 2
    x = lo + np.floor(rng.random(shape) * (hi - lo + 1)).astype(np.int64)
    return np.clip(x, 0, top)


def _inf(fmt: Format, sign: np.ndarray) -> np.ndarray:
    """±Inf bits (e4m3, without Inf: its NaN ``S.1111.111``)."""
    ebits, mbits, _ = _fields(fmt)
    mant = (1 << mbits) - 1 if fmt.nan_encoding == "fn" else 0
    return _compose(fmt, sign, np.full(sign.shape, (1 << ebits) - 1), np.full(sign.shape, mant))


def draw_inputs(
    instr: Instruction, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random ``a [n, K]``, ``b [n, K]``, ``c [n]`` bits of ``instr``'s formats, and each row's
    regime (an index into :data:`REGIMES`).

    - ``random_bits``: uniform container bits (every encoding, NaN and Inf included);
    - ``finite``: uniform exponent field over the finite range, random sign and significand;
    - ``window``: a and b fields within ±3 of a random centre, c's exponent within ±8 of the
      largest product's, so alignment truncation at F bits decides the result;
    - ``tiny``: fields 0..3 (subnormals and the smallest normals), c zero or tiny: the sum
      sits at the bottom of the output range where e_zero and the exponent floor matter;
    - ``zero_partner``: as ``window`` with a third of the a or b elements ±0 (zero products
      next to large partners) and c ±0 half the time;
    - ``cancel``: as ``window`` with odd terms the negatives of even ones (exact cancellation,
      one significand bit flipped in some), c ±0 or small;
    - ``inf``: as ``window`` with an eighth of the a and b elements ±Inf (e4m3, which has no
      Inf: its NaN) and c ±Inf a quarter of the time (Inf + -Inf, Inf x 0 included);
    - ``exp_floor``: c = ±0, every product zero except, in one block, ``m·2^u`` (m = 1..3, u the
      exponent of the output format's smallest subnormal: 2^-149 fp32, 2^-24 fp16) and
      ``-2^t`` with t = e_zero - F + U[-3, 2] (the instruction's own e_zero and F; for an RNE
      output the first term is ``(m + 1/2)·2^u``, a tie that the second breaks): whether the
      tiny negative term survives the alignment to the zero terms' anchor decides the last bit,
      so e_zero and F ± 1 show (tensorcore_arithmetic.md, vector 6). Products the input formats
      cannot reach underflow to zero (e_zero is moot there).
    """
    fa, fb, fc = (get_format(x) for x in (instr.a_fmt, instr.b_fmt, instr.c_format))
    K = instr.k
    reg = rng.integers(0, len(REGIMES), n)
    out = []
    for f in (fa, fb):
        ebits, mbits, _ = _fields(f)
        shp = (n, K)
        sign = rng.integers(0, 2, shp)
        mant = rng.integers(0, 1 << mbits, shp)
        full = _random_container(f, shp, rng)
        fin = _compose(f, sign, _finite_field(f, 0, (1 << ebits), rng, shp), mant)
        centre = rng.integers(0, 1 << ebits, (n, 1))
        win = _compose(f, sign, _finite_field(f, centre - 3, centre + 3, rng, shp), mant)
        tiny = _compose(f, sign, _finite_field(f, 0, 3, rng, shp), mant)
        x = np.where((reg == 0)[:, None], full, fin)
        x = np.where(np.isin(reg, (2, 4, 5, 6))[:, None], win, x)
        x = np.where((reg == 3)[:, None], tiny, x)
        x = np.where((reg == 6)[:, None] & (rng.random(shp) < 1 / 8), _inf(f, sign), x)
        out.append(x)
    a, b = out
    # zero_partner: zero a third of a or of b (signed zeros), one operand per element.
    zmask = (reg == 4)[:, None] & (rng.random((n, K)) < 1 / 3)
    which = rng.random((n, K)) < 0.5
    lay_a, lay_b = fa.bit_layout, fb.bit_layout
    za = (rng.integers(0, 2, (n, K)).astype(np.uint64) << np.uint64(lay_a.sign_shift)).astype(
        lay_a.uint
    )
    zb = (rng.integers(0, 2, (n, K)).astype(np.uint64) << np.uint64(lay_b.sign_shift)).astype(
        lay_b.uint
    )
    a = np.where(zmask & which, za, a)
    b = np.where(zmask & ~which, zb, b)
    # cancel: term 2j+1 = -(term 2j), with one significand bit of a flipped in a quarter.
    cm = reg == 5
    if K >= 2:
        ev = a[cm, 0::2][:, : K // 2]
        flip = rng.random(ev.shape) < 0.25
        ua = np.dtype(lay_a.uint).type
        neg = ev ^ ua(1 << lay_a.sign_shift)
        neg = np.where(flip, neg ^ ua(1 << lay_a.mantissa_shift), neg)
        a_c = a[cm]
        a_c[:, 1::2][:, : K // 2] = neg
        a[cm] = a_c
        b_c = b[cm]
        b_c[:, 1::2][:, : K // 2] = b_c[:, 0::2][:, : K // 2]
        b[cm] = b_c
    # exp_floor: two products near the output's bottom; everything else zero.
    ef = np.flatnonzero(reg == 7)
    if ef.size:
        fd = get_format(instr.acc_fmt)
        u = fd.emin - fd.precision + 1
        m = rng.integers(1, 4, ef.size)
        t = instr.e_zero - instr.frac_bits + rng.integers(-3, 3, ef.size)
        L = max(2, min(instr.block, K))
        s0 = L * rng.integers(0, K // L, ef.size)
        sgn = np.where(rng.random(ef.size) < 0.5, 1.0, -1.0)
        va = np.zeros((ef.size, K))
        vb = np.zeros((ef.size, K))
        rows = np.arange(ef.size)
        if instr.out_rounding == "rne":  # a tie the tiny term breaks: (m + 1/2) 2^u
            m, u = 2 * m + 1, u - 1
        for j, (mag, e) in enumerate(((m.astype(np.float64), u), (-np.ones(ef.size), t))):
            ea = np.maximum(np.ceil(np.asarray(e) / 2), fa.emin - fa.precision + 1 + 2)
            va[rows, s0 + j] = sgn * mag * np.exp2(ea)
            vb[rows, s0 + j] = np.exp2(e - ea)
        a[ef] = from_values(fa, va)
        b[ef] = from_values(fb, vb)
    # c
    ebc, mbc, biasc = _fields(fc)
    _, _, bias_a = _fields(fa)
    _, _, bias_b = _fields(fb)
    sc = rng.integers(0, 2, n)
    mc = rng.integers(0, 1 << mbc, n)
    ea = (a >> np.uint64(lay_a.exponent_shift)).astype(np.int64) & ((1 << _fields(fa)[0]) - 1)
    eb = (b >> np.uint64(lay_b.exponent_shift)).astype(np.int64) & ((1 << _fields(fb)[0]) - 1)
    pmax = (ea - bias_a + eb - bias_b).max(axis=1)
    c_full = _random_container(fc, (n,), rng)
    c_fin = _compose(fc, sc, _finite_field(fc, 0, 1 << ebc, rng, (n,)), mc)
    c_near = pmax + biasc + rng.integers(-8, 9, n)
    c_win = _compose(fc, sc, _finite_field(fc, c_near, c_near, rng, (n,)), mc)
    c_zero = (sc.astype(np.uint64) << np.uint64(fc.bit_layout.sign_shift)).astype(
        fc.bit_layout.uint
    )
    c_tiny = _compose(fc, sc, _finite_field(fc, 0, 1, rng, (n,)), mc)
    half = rng.random(n) < 0.5
    c = np.where(reg == 0, c_full, c_fin)
    c = np.where(reg == 2, c_win, c)
    c = np.where(reg == 3, np.where(half, c_zero, c_tiny), c)
    c = np.where(reg == 4, np.where(half, c_zero, c_win), c)
    c = np.where(reg == 5, np.where(half, c_zero, c_tiny), c)
    c = np.where(reg == 6, np.where(rng.random(n) < 0.25, _inf(fc, sc), c_win), c)
    c = np.where(reg == 7, c_zero, c)
    return a, b, c, reg


def run_precision(instr: Instruction, arch: str, a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """``d`` bits ``[T]`` of ``precision.mma`` for rows of ``a``/``b`` bits and ``c`` bits."""
    fa, fb, fc, fd = (
        get_format(x) for x in (instr.a_fmt, instr.b_fmt, instr.c_format, instr.acc_fmt)
    )
    T, K = a.shape
    A = a.view(fa.storage).reshape(T, 1, K)
    B = b.view(fb.storage).reshape(T, K, 1)
    C = c.view(fc.storage).reshape(T, 1, 1)
    d = mma(
        A,
        B,
        C,
        arch=arch,
        fmt=fa,
        b_fmt=fb,
        op=instr.family,
        shape=instr.shape,
        bitop=instr.bitop or None,
        d_fmt=fd if fd.name != fc.name else None,
    )
    return np.asarray(d).reshape(T).view(fd.bit_layout.uint)


def comparable(instr: Instruction, arch: str = "") -> bool:
    """Whether MMA-Sim models this instruction: floating-point ``mma.sync``, and sm70's WMMA
    (MMA-Sim has no WMMA; sm70's is its m8n8k4 block chained over k = 16)."""
    if instr.is_integer:
        return False
    return instr.family == "mma" or (instr.family == "wmma" and arch == "sm70")


def mmasim_string(instr: Instruction) -> str:
    """MMA-Sim's ``shape_and_type`` for ``instr``; sm70 WMMA is MMA-Sim's m8n8k4 chained."""
    p = {n: get_format(n).ptx for n in (instr.a_fmt, instr.b_fmt, instr.acc_fmt, instr.c_format)}
    m, n, k = (8, 8, 4) if instr.family == "wmma" else instr.shape
    return f"m{m}n{n}k{k}.{p[instr.acc_fmt]}.{p[instr.a_fmt]}.{p[instr.b_fmt]}.{p[instr.c_format]}"


#: The optional packages of the comparison (import name: what it is), not dependencies of
#: precision: MMA-Sim and the PyTorch it runs on.
OPTIONAL_DEPENDENCIES = {"mmasim": "MMA-Sim", "torch": "PyTorch"}


class MissingDependencyError(ImportError):
    """MMA-Sim or PyTorch is not importable; the message names which and how to install them
    (one line, for the command line's ``error:``)."""


def _missing_dependency(exc: ImportError) -> MissingDependencyError:
    """The error for a failed import of the optional dependencies, naming the missing ones."""
    missing = [
        f"{label} (`{name}`)"
        for name, label in OPTIONAL_DEPENDENCIES.items()
        if importlib.util.find_spec(name) is None
    ] or [f"a working MMA-Sim and PyTorch ({exc})"]  # both found, yet the import failed
    return MissingDependencyError(
        f"model_compare needs {' and '.join(missing)}, which precision does not install; "
        "install them into a separate environment with this project, e.g. "
        "`python -m venv /tmp/mmavenv && /tmp/mmavenv/bin/pip install mmasim torch numpy "
        "ml_dtypes && /tmp/mmavenv/bin/pip install --no-deps -e .`, and run it with "
        "/tmp/mmavenv/bin/python"
    )


def mmasim_model(arch: str) -> OtherModel:
    """MMA-Sim's ``MMA(arch, shape_and_type).dpa`` as an :data:`OtherModel` (lazy import).

    Raises :class:`MissingDependencyError` (an ImportError) when MMA-Sim or PyTorch is not
    importable.
    """
    try:
        import torch
        from mmasim.nv_ptx import MMA
    except ImportError as e:
        raise _missing_dependency(e) from e
    tdt = {
        "f16": torch.float16,
        "bf16": torch.bfloat16,
        "tf32": torch.float32,
        "f32": torch.float32,
        "f64": torch.float64,
        "e4m3": torch.float8_e4m3fn,
        "e5m2": torch.float8_e5m2,
    }
    sint = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
    tint = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    name = MMASIM_ARCH[arch]

    def to_t(bits: np.ndarray, fmt: Format) -> Any:
        size = bits.dtype.itemsize
        return torch.from_numpy(np.ascontiguousarray(bits).view(sint[size])).view(tdt[str(fmt.ptx)])

    from mmasim.nv_ptx.isa_mma import mma_shape_and_type

    def run(instr: Instruction, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        if mmasim_string(instr) not in mma_shape_and_type[name]:
            raise NotImplementedError(f"MMA-Sim {name} has no {mmasim_string(instr)}")
        op = MMA(name, mmasim_string(instr))
        fa, fb, fc, fd = (
            get_format(x) for x in (instr.a_fmt, instr.b_fmt, instr.c_format, instr.acc_fmt)
        )
        d = op.dpa(to_t(a, fa), to_t(b, fb), to_t(c, fc))
        size = np.dtype(fd.bit_layout.uint).itemsize
        return d.contiguous().view(tint[size]).numpy().view(fd.bit_layout.uint)

    return run


# ------------------------------------------------------------------------------------------
# classification


def _decode(fmt: Format, bits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(is_nan, is_inf, is_zero) of bit patterns (tf32 pad bits ignored)."""
    with np.errstate(invalid="ignore"):
        x = np.ascontiguousarray(bits).view(fmt.storage).astype(np.float64)
    return np.isnan(x), np.isinf(x), x == 0


@dataclass
class Result:
    """Match counts of one instruction; ``classes[name]`` = disagreeing rows of that class,
    ``examples[name]`` = first disagreeing row indices (for a closer look)."""

    instr: Instruction
    n: int
    matches: int
    note: str = ""
    #: where the inputs came from (a recording, for :func:`replay`); empty for random inputs
    source: str = ""
    classes: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[int]] = field(default_factory=dict)


def classify(
    instr: Instruction,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    d_ours: np.ndarray,
    d_other: np.ndarray,
) -> np.ndarray:
    """The class (index into :data:`CLASSES`) of every row; -1 where the two agree.

    Agreement is bit equality, or both NaN with different bits (counted as ``nan_payload``,
    since NVIDIA writes one canonical NaN and the models may not). The first test that holds
    names the class: ``nan_payload``; ``nan_vs_number`` (one NaN, the other not);
    ``inf_vs_finite`` (one ±Inf, the other finite: overflow handling); ``signed_zero`` (both
    zero, signs differ); ``special_input`` (NaN/Inf in a, b or c); ``zero_product`` (a zero
    product next to a nonzero partner, or zero c, in the row: the anchor of zero terms);
    ``tiny_sum`` (both results below 2^-100 for an fp32 output or 2^-10 for fp16: the e_zero /
    exponent floor region); ``other``.
    """
    fa, fb, fc, fd = (
        get_format(x) for x in (instr.a_fmt, instr.b_fmt, instr.c_format, instr.acc_fmt)
    )
    n0, i0, z0 = _decode(fd, d_ours)
    n1, i1, z1 = _decode(fd, d_other)
    differ = d_ours != d_other
    cls = np.full(d_ours.shape, -1, np.int64)
    an, ai, az = _decode(fa, a)
    bn, bi, bz = _decode(fb, b)
    cn, ci, cz = _decode(fc, c)
    special = (an | ai | bn | bi).any(axis=1) | cn | ci
    zprod = ((az & ~bz) | (bz & ~az)).any(axis=1) | cz
    with np.errstate(invalid="ignore"):
        vo = np.abs(np.ascontiguousarray(d_ours).view(fd.storage).astype(np.float64))
        vt = np.abs(np.ascontiguousarray(d_other).view(fd.storage).astype(np.float64))
    floor = 2.0**-10 if fd.name == "fp16" else 2.0**-100
    tiny = (vo < floor) & (vt < floor)
    tests = [
        n0 & n1,
        n0 ^ n1,
        i0 ^ i1,
        z0 & z1,
        special,
        zprod,
        tiny,
        np.ones_like(differ),
    ]
    for k in range(len(tests) - 1, -1, -1):
        cls = np.where(differ & tests[k], k, cls)
    return cls


CLASSES = (
    "nan_payload",
    "nan_vs_number",
    "inf_vs_finite",
    "signed_zero",
    "special_input",
    "zero_product",
    "tiny_sum",
    "other",
)


def compare(
    arch: str,
    other: OtherModel,
    n: int = 100_000,
    seed: int = 0,
    instructions: list[Instruction] | None = None,
) -> list[Result]:
    """Match counts of ``precision.mma`` against ``other`` for each comparable instruction.

    ``n`` random dot products per instruction (:func:`draw_inputs`, seeded with ``seed`` and
    the instruction's index), compared bitwise; disagreements classified by :func:`classify`.
    """
    model = get_arch(arch)
    todo = instructions or [i for i in model.all_instructions() if comparable(i, model.name)]
    results = []
    for idx, instr in enumerate(todo):
        rng = np.random.default_rng([seed, idx])
        a, b, c, _ = draw_inputs(instr, n, rng)
        try:
            theirs = other(instr, a, b, c)
        except NotImplementedError as e:
            results.append(Result(instr, 0, 0, note=str(e)))
            continue
        ours = run_precision(instr, model.name, a, b, c)
        cls = classify(instr, a, b, c, ours, theirs)
        res = Result(instr, n, int((cls == -1).sum()))
        for k, name in enumerate(CLASSES):
            rows = np.flatnonzero(cls == k)
            if rows.size:
                res.classes[name] = int(rows.size)
                res.examples[name] = rows[:5].tolist()
        results.append(res)
    return results


def replay(arch: str, other: OtherModel, dirs: list[str]) -> list[Result]:
    """Run ``other`` on recorded hardware inputs and compare with the recorded outputs.

    ``dirs`` are recording folders (``manifest.json`` with an ``instructions`` map of entries
    that name their ``ptx`` and, optionally, ``file``; the ``.npz`` files hold ``a [T, M, K]``,
    ``b [T, K, N]``, ``c``/``d [T, M, N]`` bits). Every recorded floating-point ``mma.sync``
    instruction of ``arch`` is replayed as ``T·M·N`` dot products of length K (a chained file,
    K = 4k, is the other model's chain of instructions); the classes are those of
    :func:`classify` with the hardware's ``d`` in place of precision's.
    """
    import json
    from pathlib import Path

    model = get_arch(arch)
    by_ptx = {i.ptx: i for i in model.all_instructions() if comparable(i, model.name)}
    results = []
    for folder in map(Path, dirs):
        manifest = json.loads((folder / "manifest.json").read_text())
        for name, entry in manifest.get("instructions", {}).items():
            instr = by_ptx.get(entry.get("ptx", ""))
            if instr is None or instr.family != "mma":
                continue
            z = np.load(folder / entry.get("file", f"{name}.npz"))
            a, b, c, d = z["a"], z["b"], z["c"], z["d"]
            T, M, K = a.shape
            N = b.shape[2]
            a_rows = np.broadcast_to(a[:, :, None, :], (T, M, N, K)).reshape(-1, K)
            b_rows = np.broadcast_to(b.transpose(0, 2, 1)[:, None], (T, M, N, K)).reshape(-1, K)
            c_rows, d_rows = c.reshape(-1), d.reshape(-1)
            try:
                theirs = other(instr, a_rows, b_rows, c_rows)
            except NotImplementedError as e:
                results.append(Result(instr, 0, 0, note=f"{folder.name}/{name}: {e}"))
                continue
            cls = classify(instr, a_rows, b_rows, c_rows, d_rows, theirs)
            res = Result(instr, d_rows.size, int((cls == -1).sum()), note="")
            for k, cname in enumerate(CLASSES):
                rows = np.flatnonzero(cls == k)
                if rows.size:
                    res.classes[cname] = int(rows.size)
                    res.examples[cname] = rows[:5].tolist()
            res.source = f"{folder.name}/{name} (K = {K})"
            results.append(res)
    return results


#: One-parameter variants of :func:`sensitivity`: (label, F change, L factor, e_zero change).
VARIANTS = (
    ("F-1", -1, 1.0, 0),
    ("F+1", 1, 1.0, 0),
    ("L/2", 0, 0.5, 0),
    ("2L", 0, 2.0, 0),
    ("e_zero-1", 0, 1.0, -1),
    ("e_zero+1", 0, 1.0, 1),
)


def sensitivity(arch: str, n: int = 100_000, seed: int = 1) -> str:
    """How many of ``n`` random dot products change when MMA-Sim's T-FDPA is run with one
    parameter of each fused-block instruction changed (F ± 1, L halved/doubled, e_zero ± 1;
    both NaN counts as equal). Zero means these inputs cannot see that parameter; a Markdown
    table. Needs mmasim (its ``MMA_T_FDPA`` with explicit parameters)."""
    import torch
    from mmasim.arithmetic.fdpa import MMA_T_FDPA

    to_torch = mmasim_model(arch)  # checks the import and gives the same conversions
    del to_torch
    tdt = {
        "f16": torch.float16,
        "bf16": torch.bfloat16,
        "tf32": torch.float32,
        "f32": torch.float32,
        "e4m3": torch.float8_e4m3fn,
        "e5m2": torch.float8_e5m2,
    }
    sint = {1: np.int8, 2: np.int16, 4: np.int32}
    tint = {1: torch.int8, 2: torch.int16, 4: torch.int32}

    def tt(bits: np.ndarray, f: Format) -> Any:
        raw = np.ascontiguousarray(bits).view(sint[bits.dtype.itemsize])
        return torch.from_numpy(raw).view(tdt[str(f.ptx)])

    model = get_arch(arch)
    head = " | ".join(v[0] for v in VARIANTS)
    lines = [f"| {arch} instruction | L, F, e_zero | {head} |", "|---" * (2 + len(VARIANTS)) + "|"]
    for instr in model.all_instructions():
        if not comparable(instr, model.name) or instr.a_fmt == "fp64":
            continue
        a, b, c, _ = draw_inputs(instr, n, np.random.default_rng([seed, 0]))
        ours = run_precision(instr, model.name, a, b, c)
        fa, fb, fc, fd = (
            get_format(x) for x in (instr.a_fmt, instr.b_fmt, instr.c_format, instr.acc_fmt)
        )
        rho = {"rne": "RNE-FP16", "rz_e8m13": "RZ-E8M13"}.get(instr.out_rounding, "RZ-FP32")
        L, F, ez = instr.block, instr.frac_bits, instr.e_zero
        size = np.dtype(fd.bit_layout.uint).itemsize
        with np.errstate(invalid="ignore"):
            nan0 = np.isnan(ours.view(fd.storage).astype(np.float64))
        cells = []
        for _, df, lf, de in VARIANTS:
            L2 = int(L * lf)
            if L2 > instr.k or L2 < 1:
                cells.append("–")
                continue
            op = MMA_T_FDPA(F + df, rho, L2, ez + de, fa.ptx, fb.ptx)
            d = op.dpa(tt(a, fa), tt(b, fb), tt(c, fc)).contiguous().view(tint[size]).numpy()
            d = d.view(fd.bit_layout.uint)
            with np.errstate(invalid="ignore"):
                both_nan = np.isnan(d.view(fd.storage).astype(np.float64)) & nan0
            cells.append(f"{int(((d != ours) & ~both_nan).sum()):,}")
        lines.append(f"| `{instr.ptx}` | {L}, {F}, {ez} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_table(arch: str, results: list[Result]) -> str:
    """A Markdown table: instruction, matches / n, and the count of each disagreement class."""
    lines = [
        f"| {arch} instruction | MMA-Sim string | matches | disagreements by class |",
        "|---|---|---|---|",
    ]
    for r in results:
        cls = r.note or ", ".join(f"{k}: {v:,}" for k, v in r.classes.items()) or "none"
        lines.append(
            f"| `{r.instr.ptx}`{' ' + r.source if r.source else ''} | `{mmasim_string(r.instr)}` "
            f"| {r.matches:,} / {r.n:,} | {cls} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI: ``python -m precision.probe.model_compare ARCH [--n N] [--seed S] [--examples]``.

    Returns the exit code: 0, or 2 (one ``error:`` line on stderr) when MMA-Sim or PyTorch is
    missing.
    """
    p = argparse.ArgumentParser(
        prog="python -m precision.probe.model_compare", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("arch", choices=("sm70", "sm75", "sm80", "sm89", "sm90", "sm100"))
    p.add_argument("--n", type=int, default=100_000, help="dot products per instruction")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--examples", action="store_true", help="print disagreeing rows' indices")
    p.add_argument(
        "--replay",
        nargs="+",
        metavar="DIR",
        help="instead of random inputs, run MMA-Sim on these hardware recordings "
        "(e.g. tests/data/sm90 tests/data/sm90_mma) and compare with the recorded d",
    )
    p.add_argument(
        "--sensitivity",
        action="store_true",
        help="instead: how many outputs change with F +- 1, L x 2 / 2, e_zero +- 1",
    )
    args = p.parse_args(argv)
    try:
        other = mmasim_model(args.arch)
    except MissingDependencyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.sensitivity:
        print(sensitivity(args.arch, n=args.n))
        return 0
    if args.replay:
        results = replay(args.arch, other, args.replay)
    else:
        results = compare(args.arch, other, n=args.n, seed=args.seed)
    print(format_table(args.arch, results))
    if args.examples:
        for r in results:
            for name, rows in r.examples.items():
                print(f"{r.instr.ptx} {name}: rows {rows}")
    return 0


if __name__ == "__main__":
    run_main(main)
