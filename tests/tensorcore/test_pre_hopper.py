"""The sm70 / sm75 / sm80 / sm89 instruction data run through ``precision.mma``.

No hardware outputs exist here for most of these instructions (see docs/coverage.md), so:

- integer, b1 and f64 instructions are compared with exact arithmetic (int64 sums wrapped
  modulo 2^32; an FMA chain computed with ``fractions.Fraction`` and rounded to nearest by
  ``float()``);
- floating-point instructions are compared with an independent chain of
  :func:`precision.tensorcore.fdpa.block` calls built from the instruction's stated parameters
  (block, F, e_zero, rounding): a consistency check of the dispatch, not evidence;
- the literature's known-answer vectors (tensorcore_arithmetic.md §8.6, computed from the
  published models, not run on hardware) pin F and e_zero per generation;
- the exact-arithmetic instructions of sm90 and sm100 that no recording covers (their
  ``evidence`` says "exact ... not recorded") get the same exact check, and the ``evidence`` of
  every arch names only files that exist (tests/probe/test_published.py checks that each
  "published file" evidence is replayed).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zlib
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from precision import mma
from precision.formats import get_format
from precision.tensorcore import ARCHS, fdpa
from precision.tensorcore.arch import Instruction
from precision.tensorcore.fragments import mma_fragments, quadpair_fragments

OLD = ("sm70", "sm75", "sm80", "sm89")
INSTRUCTIONS = [(arch, ins) for arch in OLD for ins in ARCHS[arch].all_instructions()]
#: Instructions per generation (docs/coverage.md: ptxas assembles 14 / 39 / 55 mma.sync strings
#: on sm_75 / sm_80 / sm_89; sm70 has 6 WMMA and 3 mma.sync). A dropped instruction, or an
#: empty parameter list that would let the tests below pass on nothing, fails here.
COUNTS = {"sm70": 9, "sm75": 14, "sm80": 39, "sm89": 55}
MMA_SYNC_COUNTS = {"sm70": 3, "sm75": 14, "sm80": 39, "sm89": 55}
#: sm90 / sm100 instructions backed by exact arithmetic alone (no recording names them).
EXACT_UNRECORDED = [
    (arch, ins)
    for arch in ("sm90", "sm100")
    for ins in ARCHS[arch].all_instructions()
    if ins.evidence.startswith("exact ") and "not recorded" in ins.evidence
]
REPO = Path(__file__).resolve().parents[2]


def _id(case: tuple[str, Instruction]) -> str:
    arch, ins = case
    return (
        f"{arch}-{ins.family}-{ins.ptx.split('.aligned.')[1]}{'-' + ins.bitop if ins.bitop else ''}"
    )


def _rng(case: tuple[str, Instruction]) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(_id(case).encode()))


def _values(rng: np.random.Generator, fmt: str, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """Operands of ``fmt``. ``"moderate"``: random values of magnitude 2^-6 .. 2^6 (rounded to
    the format), 5 % subnormals, 10 % zeros; ``"bits"``: uniformly random bit patterns (every
    exponent, overflow and underflow), 10 % zeros; both keep at most one Inf/NaN."""
    f = get_format(fmt)
    udt = f"u{f.storage.itemsize}"
    if kind == "bits":
        bits = rng.integers(0, 1 << f.container_bits, size=shape, dtype=np.uint64).astype(udt)
        x = bits.view(f.storage)
    else:
        v = rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 7, shape)
        x = v.astype(np.float32).astype(f.storage)
        sub = rng.random(shape) < 0.05
        mant = rng.integers(1, 1 << f.mantissa_bits, size=shape, dtype=np.uint64) << f.pad_bits
        x.view(udt)[sub] = mant[sub].astype(udt)
    x[rng.random(shape) < 0.1] = 0
    with np.errstate(invalid="ignore"):  # casting a NaN payload of a narrow format warns
        special = np.flatnonzero(~np.isfinite(x.astype(np.float64)))
    x.flat[special[1:]] = 0
    return x


def _operands(ins: Instruction, rng: np.random.Generator, kind: str):
    m, n, k = ins.shape
    kk = k if ins.c_fmt else 2 * k  # mixed c/d: one instruction; otherwise a chain of two
    if ins.is_integer:
        fa, fb = get_format(ins.a_fmt), get_format(ins.b_fmt)
        a = rng.integers(fa.min_value, fa.max_normal + 1, size=(m, kk)).astype(fa.storage)
        b = rng.integers(fb.min_value, fb.max_normal + 1, size=(kk, n)).astype(fb.storage)
        c = rng.integers(-(2**31), 2**31, size=(m, n), dtype=np.int64).astype(np.int32)
        c[0, :] = 2**31 - 1  # wraps on any positive sum
        return a, b, c
    if ins.acc_fmt == "fp64":  # exact-arithmetic check: finite values of moderate range
        return tuple(
            rng.standard_normal(s) * 2.0 ** rng.integers(-20, 20, s)
            for s in ((m, kk), (kk, n), (m, n))
        )
    a = _values(rng, ins.a_fmt, (m, kk), kind)
    b = _values(rng, ins.b_fmt, (kk, n), kind)
    c = _values(rng, ins.c_format, (m, n), kind)
    return a, b, c


def _run(arch: str, ins: Instruction, a, b, c):
    return mma(
        a,
        b,
        c,
        arch=arch,
        op=ins.family,
        fmt=ins.a_fmt,
        b_fmt=ins.b_fmt,
        shape=ins.shape,
        bitop=ins.bitop or None,
        d_fmt=ins.acc_fmt,
    )


def _exact_integer(ins: Instruction, a, b, c) -> np.ndarray:
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    if ins.bitop == "xor.popc":
        s = (a64[:, :, None] ^ b64[None, :, :]).sum(axis=1)
    else:  # and.popc is the product of bits; integers multiply
        s = a64 @ b64
    return ((c.astype(np.int64) + s) % 2**32).astype(np.uint32).view(np.int32)


def _exact_fma_chain(a, b, c) -> np.ndarray:
    out = np.empty_like(c)
    for i, j in np.ndindex(c.shape):
        acc = float(c[i, j])
        for k in range(a.shape[1]):  # one IEEE FMA per k: exact a*b + acc, rounded once
            acc = float(Fraction(a[i, k]) * Fraction(b[k, j]) + Fraction(acc))
        out[i, j] = acc
    return out


def _fdpa_chain(ins: Instruction, a, b, c) -> np.ndarray:
    """Blocks of ``ins.block`` products in increasing k with the instruction's parameters."""
    if ins.a_fmt == "tf32":
        a, b = ((x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32) for x in (a, b))
    av, ae = fdpa.decode(a, get_format(ins.a_fmt).emin)
    bv, be = fdpa.decode(b, get_format(ins.b_fmt).emin)
    acc = c
    for k0 in range(0, a.shape[1], ins.block):
        ks = slice(k0, k0 + ins.block)
        cv, ce = fdpa.decode(acc, get_format(acc.dtype).emin)
        acc = fdpa.block(
            av[None, :, ks],
            ae[None, :, ks],
            bv[None, ks, :],
            be[None, ks, :],
            cv[None],
            ce[None],
            frac_bits=ins.frac_bits,
            e_zero=ins.e_zero,
            rounding=ins.out_rounding,
            check_special=True,
        )[0]
    return acc


# Float instructions run on both operand sets, the exact families on one.
RUNS = [
    (case, kind)
    for case in INSTRUCTIONS + EXACT_UNRECORDED
    for kind in ("moderate", "bits")
    if kind == "moderate" or get_format(case[1].acc_fmt).name in ("fp32", "fp16")
]


def test_every_instruction_is_run():
    """The parameter lists are what docs/coverage.md counts, and every instruction is run."""
    for arch in OLD:
        all_ins = ARCHS[arch].all_instructions()
        assert len(all_ins) == COUNTS[arch], arch
        assert sum(i.family == "mma" for i in all_ins) == MMA_SYNC_COUNTS[arch], arch
    ids = [f"{_id(case)}-{kind}" for case, kind in RUNS]
    assert len(set(ids)) == len(ids)  # no two runs collapse into one test id
    assert {_id(c) for c, _ in RUNS} == {_id(c) for c in INSTRUCTIONS + EXACT_UNRECORDED}
    # sm90: every integer pairing/shape is recorded since 2026-11-27; sm100: s8 (0 + 1)
    assert [a for a, _ in EXACT_UNRECORDED].count("sm90") == 0
    assert [a for a, _ in EXACT_UNRECORDED].count("sm100") == 1


@pytest.mark.parametrize(("case", "kind"), RUNS, ids=[f"{_id(case)}-{kind}" for case, kind in RUNS])
def test_instruction_runs_through_mma(case, kind):
    arch, ins = case
    a, b, c = _operands(ins, _rng(case), kind)
    d = _run(arch, ins, a, b, c)
    assert d.dtype == get_format(ins.acc_fmt).storage and d.shape == c.shape
    if ins.is_integer:
        want = _exact_integer(ins, a, b, c)
    elif ins.acc_fmt == "fp64":
        want = _exact_fma_chain(a, b, c)
    else:
        want = _fdpa_chain(ins, a, b, c)
    if kind == "moderate" and not ins.is_integer:  # not dominated by NaN, Inf or zero
        assert (np.isfinite(d) & (d != 0)).mean() > 0.5
    bits = d.dtype.itemsize * 8
    got_bits, want_bits = d.view(f"u{bits // 8}"), want.view(f"u{bits // 8}")
    bad = np.argwhere(got_bits != want_bits)
    assert bad.size == 0, f"{ins.ptx}: {len(bad)} outputs differ, first at {bad[0]}"


SATF = [
    case
    for case in INSTRUCTIONS + EXACT_UNRECORDED
    if case[1].is_integer and not case[1].bitop and case[1].family == "mma"
]


@pytest.mark.parametrize("case", SATF, ids=[_id(c) for c in SATF])
def test_integer_satfinite_clamps_each_instruction(case):
    """``.satfinite`` (``satf=True``): each instruction's exact sum c + Σ a·b is clamped to
    [-2^31, 2^31 - 1], and the next instruction starts from the clamped value."""
    arch, ins = case
    a, b, c = _operands(ins, _rng(case), "moderate")
    c[1, :] = -(2**31)  # saturates on any negative sum (signed operands)
    d = mma(a, b, c, arch=arch, fmt=ins.a_fmt, b_fmt=ins.b_fmt, shape=ins.shape, satf=True)
    acc = c.astype(np.int64)
    clamped = np.zeros(c.shape, bool)
    for k0 in range(0, a.shape[1], ins.k):
        ks = slice(k0, k0 + ins.k)
        exact = acc + a[:, ks].astype(np.int64) @ b[ks].astype(np.int64)
        acc = np.clip(exact, -(2**31), 2**31 - 1)
        clamped |= acc != exact
    assert clamped[:2].any()  # the clamp is exercised (rows 0, 1: c at the int32 limits)
    bad = np.argwhere(d.astype(np.int64) != acc)
    assert bad.size == 0, f"{ins.satfinite_ptx}: {len(bad)} outputs differ, first at {bad[0]}"


def test_every_listed_family_is_modelled():
    """The instruction families issue 15 lists for each generation before Hopper."""

    def has(arch, op, a, acc, shape, b=None, bitop=None, c=None):
        ARCHS[arch].instruction(a, acc, b_fmt=b, op=op, shape=shape, bitop=bitop, c_fmt=c)

    for acc, c in (("fp32", "fp32"), ("fp16", "fp16"), ("fp32", "fp16")):
        for arch in ("sm70", "sm75"):
            has(arch, "mma", "fp16", acc, (8, 8, 4), c=c)
    for acc in ("fp32", "fp16"):
        for shape in ((16, 16, 16), (32, 8, 16), (8, 32, 16)):
            has("sm70", "wmma", "fp16", acc, shape)
        has("sm75", "mma", "fp16", acc, (16, 8, 8))
    for fmts, k in ((("int8", "uint8"), 16), (("int4", "uint4"), 32)):
        for a in fmts:
            for b in fmts:
                has("sm75", "mma", a, "int32", (8, 8, k), b=b)
                for arch in ("sm80", "sm89"):
                    for shape in ((16, 8, 2 * k), (16, 8, k), (8, 8, k)):
                        has(arch, "mma", a, "int32", shape, b=b)
    has("sm75", "mma", "uint1", "int32", (8, 8, 128), bitop="xor.popc")
    for arch in ("sm80", "sm89"):
        for op in ("xor.popc", "and.popc"):
            for shape in ((16, 8, 256), (16, 8, 128), (8, 8, 128)):
                has(arch, "mma", "uint1", "int32", shape, bitop=op)
        has(arch, "mma", "fp64", "fp64", (8, 8, 4))
        for acc in ("fp32", "fp16"):
            has(arch, "mma", "fp16", acc, (16, 8, 16))
            has(arch, "mma", "fp16", acc, (16, 8, 8))
        has(arch, "mma", "bf16", "fp32", (16, 8, 16))
        has(arch, "mma", "bf16", "fp32", (16, 8, 8))
        has(arch, "mma", "tf32", "fp32", (16, 8, 8))
        has(arch, "mma", "tf32", "fp32", (16, 8, 4))
    for a in ("e4m3", "e5m2"):
        for b in ("e4m3", "e5m2"):
            for acc in ("fp32", "fp16"):
                for shape in ((16, 8, 32), (16, 8, 16)):
                    has("sm89", "mma", a, acc, shape, b=b)
    with pytest.raises(TypeError, match="fp32 -> fp16"):  # ptxas refuses f32 c, f16 d
        ARCHS["sm70"].instruction("fp16", "fp16", op="mma", shape=(8, 8, 4), c_fmt="fp32")
    with pytest.raises(TypeError, match="sm75"):
        ARCHS["sm75"].instruction("uint1", "int32", op="mma", bitop="and.popc")
    with pytest.raises(TypeError, match="sm80"):
        ARCHS["sm80"].instruction("e4m3", "fp32", op="mma")


def test_evidence_names_a_published_file_or_the_literature():
    for arch, ins in INSTRUCTIONS:
        ev = ins.evidence
        assert "H200" not in ev and "recording" not in ev, (arch, ins.ptx, ev)
        assert ev.startswith(("published file tests/data/published/", "literature:", "exact ")), ev


_DATA_PATH = re.compile(r"tests/data/[\w./-]*\w")


def test_evidence_paths_exist_and_cover_every_recording():
    """Every tests/data path an ``evidence`` (of any arch) names exists, an evidence that says
    "not recorded" names no recording of its own, and every sm90 recording file is named by
    some instruction: an evidence string cannot claim a recording that is not there."""
    named: set[Path] = set()
    for arch, model in ARCHS.items():
        for ins in model.all_instructions():
            ev = ins.evidence
            paths = [REPO / m for m in _DATA_PATH.findall(ev)]
            for path in paths:
                assert path.exists(), (arch, ins.ptx, path)
            if ev.startswith(("not recorded", "exact ", "literature")):  # no file of its own
                m, n, k = ins.shape
                own = "_".join(
                    [f"m{m}n{n}k{k}"]
                    + [get_format(f).ptx for f in (ins.acc_fmt, ins.a_fmt, ins.b_fmt, ins.acc_fmt)]
                )
                assert not any(p.name.startswith(own) for p in paths), (arch, ins.ptx, ev)
            if "recording" in ev and arch != "sm90":
                raise AssertionError(f"{arch} {ins.ptx}: {ev}")
            for m in re.finditer(r"(tests/data/sm90\w*/)(\w+)\.npz and (\w+)\.npz", ev):
                named.add(REPO / f"{m[1]}{m[3]}.npz")  # "X.npz and Y.npz" in one folder
            named.update(p for p in paths if p.is_file())
    recorded = {
        p
        for d in ("sm90", "sm90_mma", "sm90_wgmma", "sm90_wgmma_extra")
        for p in (REPO / "tests/data" / d).glob("*.npz")
    }
    assert recorded - named == set()


def test_sm90_mma_recorded_set_is_the_probe_table():
    """The sm90_mma recordings the evidence names are exactly the probes that
    tests/probe/test_mma_families_recorded.py replays."""
    from precision.probe.generic import PROBES
    from precision.tensorcore.arch import _SM90_MMA_RECORDED

    assert _SM90_MMA_RECORDED == {p.name for p in PROBES}
    on_disk = {p.stem for p in (REPO / "tests/data/sm90_mma").glob("*.npz")}
    assert on_disk == _SM90_MMA_RECORDED


# Known-answer vectors of tensorcore_arithmetic.md §8.6 (computed from the published models).
def test_alignment_bits_follow_f():
    """a = b = 1, c = -(1 - 2^-24): F = 23 keeps 2^-23, F = 24 keeps 2^-24 (vector 3)."""
    a = np.zeros((16, 16), np.float16)
    a[0, 0] = 1
    c = np.zeros((16, 16), np.float32)
    c[0, 0] = -(1 - 2.0**-24)
    v100 = mma(a, a.T.copy(), c, arch="sm70")[0, 0]
    assert v100.view(np.uint32) == 0x34000000
    for arch, shape in (("sm75", (16, 8, 8)), ("sm80", (16, 8, 16)), ("sm89", (16, 8, 16))):
        m, n, k = shape
        aa, bb, cc = a[:m, :k], a[:k, :n].copy(), c[:m, :n].copy()
        bb[0, 0] = 1
        assert mma(aa, bb, cc, arch=arch)[0, 0].view(np.uint32) == 0x33800000, arch


def test_zero_anchor_floor_per_generation():
    """bf16 [2^-23, -2^-32] x [2^-126, 2^-126] + 0: 0x00000001 with Ampere's e_zero = -132
    (vector 6); fp16 -> fp16 [2^-11, 2^-k] x [2^-14, 2^-24]: the last nonzero result moves with
    e_zero and F (A100's -20 with F = 24: flips between k = 20 and 21; V100's -19 with F = 23:
    the 2^-(k+24) term survives the grid 2^(-19-23) for k <= 18, so zero for k >= 19, which
    agrees with "zero for k >= 20") (vector 7)."""
    import ml_dtypes

    a = np.zeros((16, 16), ml_dtypes.bfloat16)
    a[0, :2] = [2.0**-23, -(2.0**-32)]
    b = np.zeros((16, 8), ml_dtypes.bfloat16)
    b[:2, 0] = 2.0**-126
    for arch in ("sm80", "sm89"):
        d = mma(a, b, np.zeros((16, 8), np.float32), arch=arch)
        assert d[0, 0].view(np.uint32) == 1, arch

    def f16(arch, k, shape, op):
        m, n, kk = shape
        x = np.zeros((m, kk), np.float16)
        y = np.zeros((kk, n), np.float16)
        x[0, :2] = [2.0**-11, 2.0**-k]
        y[:2, 0] = [2.0**-14, 2.0**-24]
        d = mma(x, y, np.zeros((m, n), np.float16), arch=arch, op=op, shape=shape)
        return int(d[0, 0].view(np.uint16))

    assert [f16("sm70", k, (8, 8, 4), "mma") for k in (18, 19)] == [1, 0]
    for arch, shape in (("sm75", (16, 8, 8)), ("sm80", (16, 8, 16)), ("sm89", (16, 8, 8))):
        assert [f16(arch, k, shape, "mma") for k in (20, 21)] == [1, 0], arch


def test_mixed_c_d_is_one_instruction_on_the_cpu():
    a = np.ones((8, 8), np.float16)
    c = np.zeros((8, 8), np.float16)
    with pytest.raises(TypeError, match="fp32 -> fp16"):
        mma(a[:, :4], a[:4], c.astype(np.float32), arch="sm70", op="mma", d_fmt="fp16")
    with pytest.raises(ValueError, match="K must equal k = 4"):
        mma(a, a, c, arch="sm70", op="mma", d_fmt="fp32")
    with pytest.raises(TypeError, match="sm80"):
        mma(a[:, :4], a[:4], c, arch="sm80", d_fmt="fp32")


# --------------------------------------------------------------- ptxas accepts the PTX strings

_ACC_BITS = {"fp32": 32, "fp16": 16, "int32": 32, "fp64": 64}
_IN_BITS = {"int4": 4, "uint4": 4, "uint1": 1, "tf32": 32}


def _asm_kernel(name: str, ptx: str, ins: Instruction) -> str:
    """A CUDA kernel issuing ``ptx`` once, with the register counts of ``ins``'s fragments."""
    if ins.shape == (8, 8, 4) and ins.a_fmt == "fp16":
        fa, fb, fc = quadpair_fragments(_ACC_BITS[ins.c_format])
        fd = quadpair_fragments(_ACC_BITS[ins.acc_fmt])[2]
    else:
        in_bits = _IN_BITS.get(ins.a_fmt) or get_format(ins.a_fmt).container_bits
        fa, fb, fc = mma_fragments(ins.shape, in_bits, _ACC_BITS[ins.c_format])
        fd = mma_fragments(ins.shape, in_bits, _ACC_BITS[ins.acc_fmt])[2]

    def regs(frag, fmt: str, first: int) -> tuple[str, list[str], list[str]]:
        # (PTX operand list, C++ declarations, inline-asm constraints) of one operand
        kind, cons = {"fp32": ("float", "f"), "fp64": ("double", "d")}.get(fmt, ("unsigned", "r"))
        names = [f"v{first + i}" for i in range(frag.regs)]
        decl = [f"{kind} {v} = ({kind})p[{first + i}];" for i, v in enumerate(names)]
        ops = "{" + ", ".join(f"%{first + i}" for i in range(frag.regs)) + "}"
        return ops, decl, [f'"{cons}"({v})' for v in names]

    n = 0
    parts = []
    for frag, fmt in ((fd, ins.acc_fmt), (fa, ins.a_fmt), (fb, ins.b_fmt), (fc, ins.c_format)):
        parts.append(regs(frag, fmt, n))
        n += frag.regs
    (d_ops, d_decl, d_cons), *rest = parts
    decls = " ".join(d for _, decl, _ in parts for d in decl)
    outs = ", ".join(c.replace('"', '"=', 1) for c in d_cons)
    ins_cons = ", ".join(c for _, _, cons in rest for c in cons)
    ops = ", ".join([d_ops, *(o for o, _, _ in rest)])
    store = " ".join(f"p[{i}] = {c.split('(')[1][:-1]};" for i, c in enumerate(d_cons))
    return (
        f"__global__ void {name}(double* p) {{ {decls}\n"
        f'  asm volatile("{ptx} {ops};" : {outs} : {ins_cons});\n  {store} }}\n'
    )


def _ptxas(arch: str, source: str, tmp_path) -> subprocess.CompletedProcess:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("needs nvcc")
    cu = tmp_path / f"{arch}.cu"
    cu.write_text(source)
    cmd = [nvcc, f"-arch=sm_{arch[2:]}", "-cubin", "-o", str(tmp_path / "k.cubin"), str(cu)]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("arch", ["sm75", "sm80", "sm89"])
def test_ptxas_accepts_every_mma_sync(arch, tmp_path):
    """Each modelled mma.sync PTX string assembles for its target (nvcc 13: sm_75 and newer;
    sm70 cannot be targeted, but its m8n8k4 strings are sm75's)."""
    kernels = [
        _asm_kernel(f"k{i}", ins.ptx, ins)
        for i, ins in enumerate(ARCHS[arch].all_instructions())
        if ins.family == "mma"
    ]
    assert len(kernels) == MMA_SYNC_COUNTS[arch]  # 14 / 39 / 55, as docs/coverage.md says
    done = _ptxas(arch, "".join(kernels), tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]


def test_ptxas_refuses_f32_c_with_f16_d_for_m8n8k4(tmp_path):
    """Why sm70/sm75 model no m8n8k4 with an f32 c and an f16 d."""
    f16 = ARCHS["sm75"].instruction("fp16", "fp16", op="mma", shape=(8, 8, 4))
    ptx = f16.ptx.removesuffix(".f16") + ".f32"
    refused = replace(f16, ptx=ptx, c_fmt="fp32")
    done = _ptxas("sm75", _asm_kernel("k", ptx, refused), tmp_path)
    assert done.returncode != 0 and ".dtype must be '.f32' when .ctype is '.f32'" in done.stderr
