"""The format registry: names, aliases, properties against numpy/ml_dtypes, NaN constants, bit
layouts; every public entry point accepts any alias; tables elsewhere agree with the registry.

Expected values are typed in from the standards (IEEE 754-2019, OCP OFP8, PTX ISA type names)
and from the recorded H200 outputs (docs/hardware.md), or read from numpy / ml_dtypes.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from precision import formats as F

ROOT = Path(__file__).resolve().parents[2]

#: canonical name -> PTX type name (PTX ISA, "Fundamental types" / alternate floating point)
PTX = {
    "fp64": "f64",
    "fp32": "f32",
    "tf32": "tf32",
    "fp16": "f16",
    "bf16": "bf16",
    "e4m3": "e4m3",
    "e5m2": "e5m2",
    "int8": "s8",
    "int32": "s32",
    "uint8": "u8",
    "int4": "s4",
    "uint4": "u4",
    "uint1": "b1",
}
#: dtype whose finfo/iinfo describes the format (tf32 has none)
INFO_DTYPE = {
    "fp64": np.float64,
    "fp32": np.float32,
    "fp16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "int8": np.int8,
    "int32": np.int32,
    "uint8": np.uint8,
    "int4": ml_dtypes.int4,
    "uint4": ml_dtypes.uint4,
    "uint1": ml_dtypes.uint1,
}
#: positive quiet NaN (IEEE 754-2019 6.2.1: exponent all ones, first trailing bit 1); e4m3's
#: only NaN is S.1111.111
IEEE_QUIET_NAN = {
    "fp64": 0x7FF8_0000_0000_0000,
    "fp32": 0x7FC0_0000,
    "tf32": 0x7FC0_0000,
    "fp16": 0x7E00,
    "bf16": 0x7FC0,
    "e4m3": 0x7F,
    "e5m2": 0x7E,
}
#: NaN written by the H200 tensor cores (docs/hardware.md, "NaN payload of the output"); no
#: recording has a tf32/bf16/fp8/fp64 output, so those stay None
GPU_NAN = {"fp32": 0x7FFF_FFFF, "fp16": 0x7FFF}


def test_canonical_names_and_ptx():
    assert list(F.FORMATS) == list(PTX)
    for name, f in F.FORMATS.items():
        assert f.name == name and f.ptx == PTX[name]
        assert f.ptx in f.names  # the PTX spelling is a name of the format


def test_every_alias_resolves_and_no_name_is_shared():
    seen: dict[str, str] = {}
    for f in F.FORMATS.values():
        for n in f.names:
            assert n == n.lower() and n not in seen, (n, f.name, seen.get(n))
            seen[n] = f.name
            assert F.get_format(n) is f
            assert F.get_format(n.upper()) is f
            assert F.get_format(f"  {n} ") is f
    assert seen.keys() - set(F.FORMATS) == F.ALIASES.keys()
    assert all(F.ALIASES[a] == seen[a] for a in F.ALIASES)
    for alias in ("f16", "half", "float16", "s8", "u8", "s4", "u4", "f64", "bfloat16"):
        assert alias in seen


@pytest.mark.parametrize("name", [n for n in PTX if n != "tf32"])
def test_properties_match_numpy_and_ml_dtypes(name):
    f = F.FORMATS[name]
    dt = INFO_DTYPE[name]
    if f.is_integer:
        ii = ml_dtypes.iinfo(dt)
        assert (f.bits, f.min_value, f.max_normal) == (ii.bits, ii.min, ii.max)
        assert f.signed == (ii.min < 0) and f.exponent_bits == 0 and not f.has_subnormals
        assert (f.has_inf, f.has_nan, f.ieee_quiet_nan_bits, f.gpu_canonical_nan_bits) == (
            False,
            False,
            None,
            None,
        )
        return
    fi = ml_dtypes.finfo(dt)
    assert (f.exponent_bits, f.mantissa_bits, f.bits) == (fi.nexp, fi.nmant, fi.bits)
    assert (f.emin, f.emax) == (fi.minexp, fi.maxexp - 1)
    assert f.max_normal == float(fi.max) and f.min_normal == float(fi.smallest_normal)
    assert f.min_subnormal == float(fi.smallest_subnormal) and f.has_subnormals
    assert f.storage == np.dtype(dt) and f.container_bits == f.bits and f.pad_bits == 0
    assert F.get_format(dt) is f


def test_tf32_container_and_layout():
    f = F.FORMATS["tf32"]
    assert (f.bits, f.container_bits, f.pad_bits, f.storage) == (19, 32, 13, np.float32)
    lay = f.bit_layout
    assert (lay.sign_mask, lay.exponent_mask, lay.mantissa_mask, lay.pad_mask) == (
        0x8000_0000,
        0x7F80_0000,
        0x007F_E000,
        0x0000_1FFF,
    )
    assert F.get_format(np.float32).name == "fp32"  # a float32 array means fp32, never tf32


@pytest.mark.parametrize("name", list(PTX))
def test_bit_layout_partitions_the_encoding(name):
    f = F.FORMATS[name]
    lay = f.bit_layout
    fields = [lay.sign_mask, lay.exponent_mask, lay.mantissa_mask, lay.pad_mask]
    assert sum(fields) == (1 << (f.bits + f.pad_bits)) - 1  # disjoint and covering
    assert lay.uint == f.bits_dtype and lay.container_bits == f.container_bits
    if not f.is_integer:
        assert lay.sign_mask == 1 << (f.container_bits - 1)
        assert lay.max_finite_field == (1 << f.exponent_bits) - (1 if name == "e4m3" else 2)
        top = lay.max_finite_field << lay.exponent_shift | lay.mantissa_mask
        if name == "e4m3":  # S.1111.111 is NaN, so the largest finite is S.1111.110
            top -= 1 << lay.mantissa_shift
        assert F.from_bits(np.array([top]), f)[0] == f.max_normal


def test_fp16_layout_typed_in():
    lay = F.FORMATS["fp16"].bit_layout
    assert (lay.sign_mask, lay.exponent_mask, lay.mantissa_mask) == (0x8000, 0x7C00, 0x03FF)
    assert F.FORMATS["e4m3"].bit_layout.exponent_mask == 0x78


@pytest.mark.parametrize("name", list(IEEE_QUIET_NAN))
def test_nan_and_inf_constants(name):
    f = F.FORMATS[name]
    assert f.ieee_quiet_nan_bits == IEEE_QUIET_NAN[name]
    assert f.gpu_canonical_nan_bits == GPU_NAN.get(name)
    view = f.storage
    words = [f.ieee_quiet_nan_bits] + ([f.gpu_canonical_nan_bits] if name in GPU_NAN else [])
    with np.errstate(invalid="ignore"):
        decoded = np.array(words, dtype=f.bits_dtype).view(view).astype(np.float64)
    assert np.isnan(decoded).all()
    assert np.isnan(F.from_bits(np.array(words, dtype=f.bits_dtype), f)).all()
    if f.nan_encoding == "ieee":  # quiet: the first trailing-significand bit of the format set
        top = 1 << (f.mantissa_bits - 1 + f.pad_bits)
        assert f.ieee_quiet_nan_bits & top
    if f.has_inf:
        assert f.inf_bits is not None
        assert F.from_bits(np.array([f.inf_bits]), f)[0] == np.inf
    else:
        assert f.inf_bits is None


def test_the_two_fp32_nans_are_distinct():
    f = F.get_format("f32")
    assert f.ieee_quiet_nan_bits == 0x7FC0_0000 and f.gpu_canonical_nan_bits == 0x7FFF_FFFF
    assert f.ieee_quiet_nan_bits != f.gpu_canonical_nan_bits
    assert F.to_bits(np.array([np.nan]), f)[0] == f.ieee_quiet_nan_bits


def test_dtype_lookup():
    for dt, name in [
        (np.float64, "fp64"),
        (np.float16, "fp16"),
        (np.dtype("float32"), "fp32"),
        (np.uint8, "uint8"),
        (ml_dtypes.int4, "int4"),
        (ml_dtypes.uint4, "uint4"),
        (ml_dtypes.float8_e5m2, "e5m2"),
    ]:
        assert F.get_format(dt) is F.FORMATS[name]
    for bad in (np.int16, ml_dtypes.float8_e4m3, ml_dtypes.float8_e4m3fnuz, np.complex64):
        with pytest.raises(ValueError, match="unknown format"):
            F.get_format(bad)


# ------------------------------------------------------------------- aliases at every entry


@pytest.mark.parametrize("alias", ["f16", "FP16", "half", "float16", "binary16"])
def test_round_and_cast_accept_aliases(alias):
    x = np.random.default_rng(1).standard_normal(257) * 1e3
    assert np.array_equal(F.round(x, alias), F.round(x, "fp16"))
    assert np.array_equal(F.cast(x, alias).view(np.uint16), F.cast(x, "fp16").view(np.uint16))
    assert np.array_equal(
        F.to_bits(F.round(x, alias), alias), F.to_bits(F.round(x, "fp16"), "fp16")
    )


def test_gemm_accepts_aliases_and_reports_canonical_names():
    from precision.gemm import gemm, get_schedule

    rng = np.random.default_rng(2)
    A = rng.standard_normal((24, 40)).astype(np.float32)
    B = rng.standard_normal((40, 16)).astype(np.float32)
    want = gemm(A, B, method="plain", fmt="fp16", backend="emulator")
    for alias in ("f16", "half", "FP16", F.FORMATS["fp16"]):
        got = gemm(A, B, method="plain", fmt=alias, backend="emulator")
        assert np.array_equal(np.asarray(got).view(np.uint32), np.asarray(want).view(np.uint32))
        assert get_schedule("plain", alias).fmt == "fp16"
    assert get_schedule("satf", "s8").fmt == "int8"
    assert get_schedule("corrected", "TF32").kernel == get_schedule("corrected", "tf32").kernel


def test_config_accepts_aliases_and_stores_canonical_names():
    from precision.runner.config import parse_config

    text = """\
name = "aliases"
seed = 0
repeats = 1
[sweep]
size = [64]
distribution = ["uniform"]
method = ["plain"]
format = ["F16", "half", "bfloat16", "s8", "e4m3fn"]
"""
    (sw,) = parse_config(text, "cfg.toml").sweeps
    assert sw.formats == ("fp16", "bf16", "int8", "e4m3")


def test_exact_matmul_rounding_accepts_aliases():
    from precision.reference import exact_matmul

    A = np.array([[1.0, 2.0**-30]])
    B = np.array([[1.0], [1.0]])
    assert exact_matmul(A, B, rounding="f32").dtype == np.float32
    assert exact_matmul(A, B, rounding="F32")[0, 0] == np.float32(1.0)
    assert exact_matmul(A, B, rounding="double")[0, 0] == 1.0 + 2.0**-30
    with pytest.raises(ValueError, match="rounding must be"):
        exact_matmul(A, B, rounding="fp16")


# ------------------------------------------------------ tables elsewhere agree with the registry


def test_gpu_engine_decode_codes_match_its_cuda_source():
    from precision.tensorcore import gpu_engine as ge

    src = (ROOT / "precision" / "tensorcore" / "gpu_engine.cu").read_text()
    # decode_operand's switch: "case N:" per code, "default:" is code 4 (e5m2)
    cases = {
        int(code or 4): (int(width), int(shift or 0), int(e), int(m))
        for code, width, shift, e, m in re.findall(
            r"(?:case (\d)|default):\s*b = \(\(const uint(\d+)_t\*\)src\)\[i\](?: >> (\d+))?;"
            r"\s*ebits = (\d+);\s*mbits = (\d+);",
            src,
        )
    }
    assert sorted(cases) == [0, 1, 2, 3, 4]
    for name, code in ge._DECODE_CODE.items():
        f = F.FORMATS[name]
        if f.is_integer:
            ctype = "uint8_t" if name.startswith("u") else "int8_t"
            int_read = (
                rf"if \(fmt == {code}\)\s*\{{[^\n]*\n"
                rf"\s*sig\[i\] = \(int\)\(\(const {ctype}\*\)src\)"
            )
            assert re.search(int_read, src) and f.bits in (1, 4, 8), name
            continue
        assert cases[code] == (f.container_bits, f.pad_bits, f.exponent_bits, f.mantissa_bits)
    for dt, name in [
        (np.float16, "fp16"),
        (ml_dtypes.bfloat16, "bf16"),
        (np.float32, "tf32"),
        (ml_dtypes.float8_e4m3fn, "e4m3"),
        (ml_dtypes.float8_e5m2, "e5m2"),
        (np.int8, "int8"),
        (np.uint8, "uint8"),
    ]:
        assert ge._operand_format(np.dtype(dt)) is F.FORMATS[name]
    assert ge._operand_format(np.dtype(np.float64)) is None
    nan = re.search(
        r"nan_bits\(int wide\)\s*\{\s*return wide \? (0x[0-9A-F]+)u : (0x[0-9A-F]+)u;", src
    )
    assert nan is not None
    assert int(nan.group(1), 16) == F.FORMATS["fp32"].gpu_canonical_nan_bits
    assert int(nan.group(2), 16) == F.FORMATS["fp16"].gpu_canonical_nan_bits
    inf = re.search(
        r"\(neg \? 0xFF800000u : (0x[0-9A-F]+)u\) : \(neg \? 0xFC00u : (0x[0-9A-F]+)u\)", src
    )
    assert inf is not None
    assert int(inf.group(1), 16) == F.FORMATS["fp32"].inf_bits
    assert int(inf.group(2), 16) == F.FORMATS["fp16"].inf_bits


def test_bench_cases_come_from_the_registry():
    from precision.runner.commands.bench import FORMATS

    assert FORMATS["f16"] == (np.float16, np.float32, None)
    assert FORMATS["tf32"] == (np.float32, np.float32, "tf32")
    assert FORMATS["e4m3"] == (ml_dtypes.float8_e4m3fn, np.float32, None)
    assert FORMATS["int8"] == (np.int8, np.int32, None)


def test_unknown_format_suggests_the_closest_name():
    with pytest.raises(ValueError, match=r"unknown format 'bf61'; did you mean 'bf16'\?"):
        F.get_format("bf61")
    with pytest.raises(ValueError, match=r"unknown format 'halff'; did you mean 'half'\?"):
        F.get_format("halff")
