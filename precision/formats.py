"""Number formats, exact rounding into them, and their bit encodings.

Every other module of ``precision`` describes a number format through one :class:`Format`
record and rounds through one routine, :func:`round`. Values travel as float64 arrays: each
value of each format listed here (fp64, fp32, tf32, fp16, bf16, e4m3, e5m2, int8, int32, uint8,
int4, uint4, and uint1 = PTX b1) is exactly representable in float64, so a float64 array
*holding rounded values* is an exact, format-independent carrier. Storage dtypes (numpy /
ml_dtypes) are used only as containers.

This module is THE format registry: every property of a format that any layer needs (names and
PTX spelling, storage dtype, field widths, exponent range, Inf/NaN encodings, the IEEE quiet NaN
and the NaN the GPU's tensor cores write, the bit layout in the container) is a field or property
of its :class:`Format`; other modules derive their tables from it.

Layout of this module
---------------------
- :class:`Format`, :class:`BitLayout`, :data:`FORMATS` (plus :data:`ALIASES`),
  :func:`get_format` (any alias, case-insensitive, or a dtype).
- :func:`round`: one correctly rounded step float64 -> format, modes :data:`ROUNDING_MODES`.
  It works on the float64 exponent field and multiplies by exact powers of two; it never goes
  through an ml_dtypes cast from float64 (those narrow via float32 first and so can round
  twice, e.g. ``1 + 2**-8 + 2**-40`` becomes 1.0 in bf16 instead of 1.0078125).
- :func:`cast`: :func:`round`, then an exact conversion to ``fmt.storage``.
- :func:`to_bits` / :func:`from_bits`: encodings as unsigned integers, computed on the bit
  level from sign, exponent field and trailing significand field.

Rounding semantics (IEEE 754-2019 unless stated)
------------------------------------------------
``rne`` nearest, ties to even; ``rna`` nearest, ties away from zero; ``rz`` toward zero;
``ru`` toward +Inf; ``rd`` toward -Inf; ``stochastic``: of the two neighbours ``lo < x < hi``
the result is ``hi`` with probability ``(x - lo) / (hi - lo)`` (exactly: the uniform draw
``u`` of :meth:`numpy.random.Generator.random` lies on the grid ``k * 2**-53`` and is compared
with the magnitude, so the probability of the neighbour *farther from zero*,
``(|x| - |near|) / (|far| - |near|)``, is rounded up to a multiple of ``2**-53``: for
``x > 0`` that is ``P(hi)``, for ``x < 0`` ``P(lo)``).

- Subnormals of the target are produced (gradual underflow; no flush to zero).
- Signed zeros are kept: a negative value rounding to zero gives ``-0.0``.
- Overflow is decided after rounding with an unbounded exponent (IEEE): ``rne``, ``rna`` and
  ``stochastic`` give ``±Inf``; ``rz`` gives ``±max_normal``; ``ru`` gives ``+Inf`` /
  ``-max_normal``; ``rd`` gives ``+max_normal`` / ``-Inf``. Stochastic rounding above
  ``max_normal`` chooses between ``max_normal`` and ``2**(emax+1)``; the latter overflows.
- **e4m3** (= OCP ``float8_e4m3fn``) has no Inf: every overflow, in every mode, *saturates*
  to ``±448`` (as ``cvt.satfinite`` does on the GPU; ml_dtypes' own cast gives NaN instead).
  An input of ``±Inf`` gives NaN, as in the OCP specification and ml_dtypes.
- NaN inputs stay NaN (a float64 NaN is returned; :func:`to_bits` writes the IEEE quiet NaN).
- **Integer formats**: round to an integer with the mode, then saturate to
  ``[-2**(bits-1), 2**(bits-1) - 1]`` (unsigned: ``[0, 2**bits - 1]``); ``±Inf`` saturates,
  NaN gives 0 (as ``cvt.rni.sat`` on NVIDIA GPUs), and ``-0.0`` becomes ``+0.0`` (integers
  have no signed zero).

Example
-------
>>> import numpy as np
>>> from precision import formats
>>> x = np.array([1 + 2**-8 + 2**-40, -1e-45, 1e6])
>>> formats.round(x, "bf16")            # one exact rounding
array([ 1.0078125e+00, -0.0000000e+00,  9.9942400e+05])
>>> formats.round(x, "fp16", "rz")      # toward zero: overflow gives max_normal
array([ 1.00390625e+00, -0.00000000e+00,  6.55040000e+04])
>>> formats.to_bits(formats.round(x, "e4m3"), "e4m3")
array([ 56, 128, 126], dtype=uint8)
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

__all__ = [
    "BitLayout",
    "Format",
    "FORMATS",
    "ALIASES",
    "ROUNDING_MODES",
    "get_format",
    "round",
    "cast",
    "require_real_dtype",
    "to_bits",
    "from_bits",
]

#: Rounding modes accepted by :func:`round` and :func:`cast`.
ROUNDING_MODES: tuple[str, ...] = ("rne", "rz", "ru", "rd", "rna", "stochastic")


@dataclass(frozen=True)
class BitLayout:
    """Where the fields of a format's encoding sit in its unsigned container word.

    Bit 0 is the least significant bit of the container (``container_bits`` wide, the width of
    :attr:`Format.bits_dtype`). From the bottom: ``pad_bits`` unused low bits (tf32: the 13 low
    bits of its fp32 container, which the tensor cores ignore), then the trailing significand
    (``mantissa_bits``; integers: the value bits below the sign), then the biased exponent field
    (``exponent_bits``; integers: 0), then the sign bit where ``signed``. Bits above the sign
    are unused (sub-byte integers: s4/u4 occupy the low 4 bits of a byte).
    """

    container_bits: int
    exponent_bits: int
    mantissa_bits: int
    pad_bits: int
    signed: bool
    max_finite_field: int

    @property
    def uint(self) -> np.dtype:
        """Unsigned dtype of the container (``uint8/16/32/64``)."""
        return np.dtype(f"uint{self.container_bits}")

    @property
    def mantissa_shift(self) -> int:
        """Bit position of the trailing significand's least significant bit (= ``pad_bits``)."""
        return self.pad_bits

    @property
    def exponent_shift(self) -> int:
        """Bit position of the exponent field's least significant bit."""
        return self.pad_bits + self.mantissa_bits

    @property
    def sign_shift(self) -> int:
        """Bit position of the sign bit (the top bit of the encoding)."""
        return self.pad_bits + self.mantissa_bits + self.exponent_bits

    @property
    def sign_mask(self) -> int:
        """Mask of the sign bit (0 for unsigned integers)."""
        return 1 << self.sign_shift if self.signed else 0

    @property
    def exponent_mask(self) -> int:
        """Mask of the biased exponent field in the container."""
        return ((1 << self.exponent_bits) - 1) << self.exponent_shift

    @property
    def mantissa_mask(self) -> int:
        """Mask of the trailing significand field in the container."""
        return ((1 << self.mantissa_bits) - 1) << self.mantissa_shift

    @property
    def pad_mask(self) -> int:
        """Mask of the unused low bits (tf32: ``0x1FFF``; others 0)."""
        return (1 << self.pad_bits) - 1


@dataclass(frozen=True)
class Format:
    """A binary number format: the one description of it that every layer reads.

    Floating-point fields follow IEEE 754 naming: a finite nonzero value is
    ``(-1)**s * m * 2**e`` with ``m`` having ``precision`` significant bits (hidden bit
    included) and ``emin <= e <= emax`` for normal numbers; subnormals have ``e = emin``.

    Attributes:
        name: canonical name (a key of :data:`FORMATS`); results tables use it.
        bits: width of the encoding in bits (tf32: 19 in a 32-bit container; s4: 4 in a byte).
        precision: ``p``, significand bits including the hidden bit (signed integers:
            ``bits - 1``, unsigned: ``bits``).
        emin: exponent of the smallest normal number, ``min_normal = 2**emin``
            (integers: 0).
        emax: exponent of the largest binade (signed integers: ``bits - 2``, unsigned
            ``bits - 1``).
        has_inf: whether ±Inf is encodable.
        has_nan: whether NaN is encodable.
        is_integer: integer format (no exponent; two's complement when ``signed``).
        storage: numpy dtype that holds the values (ml_dtypes for bf16/fp8, float32 for tf32,
            int8/uint8 for s4/u4); :func:`cast` returns it.
        nan_encoding: ``"ieee"`` (exponent field all ones, nonzero trailing significand),
            ``"fn"`` (only ``S.1111.111``: the top binade is otherwise finite, no Inf, as
            OCP ``float8_e4m3fn``) or ``"none"`` (integers).
        ptx: the PTX type name (``f16``, ``e4m3``, ``s8``, ...).
        aliases: other names :func:`get_format` accepts (PTX spelling, numpy / ml_dtypes dtype
            names, common names), lower case.
        signed: integers: two's complement (``s8``) or unsigned (``u8``); floats: True.
        has_subnormals: gradual underflow below ``2**emin`` (every float format here).
        pad_bits: unused low bits of the container below the encoding (tf32: 13).
        ieee_quiet_nan_bits: the positive quiet NaN in the IEEE 754 sense (exponent field all
            ones, top trailing-significand bit set, the rest zero), in the container: fp32
            ``0x7FC00000``. e4m3 has one NaN per sign, ``0x7F``. :func:`to_bits` writes it.
            None for integers.
        gpu_canonical_nan_bits: what NVIDIA tensor cores write for a NaN result in this format,
            as recorded on an H200 (docs/hardware.md): fp32 ``0x7FFFFFFF``, fp16 ``0x7FFF``.
            None where no single NaN is recorded: tf32, bf16 and fp8 never occur as a
            recorded tensor-core output, and fp64 (DMMA) outputs carry the payload of a NaN
            operand or the default NaN ``0xFFF8000000000000``
            (:mod:`precision.tensorcore.dmma_nan`); None for integers.
    """

    name: str
    bits: int
    precision: int
    emin: int
    emax: int
    has_inf: bool
    has_nan: bool
    is_integer: bool
    storage: np.dtype
    nan_encoding: str = "ieee"
    ptx: str | None = None
    aliases: tuple[str, ...] = ()
    signed: bool = True
    has_subnormals: bool = True
    pad_bits: int = 0
    ieee_quiet_nan_bits: int | None = None
    gpu_canonical_nan_bits: int | None = None

    @property
    def mantissa_bits(self) -> int:
        """Stored (trailing) significand bits, ``precision - 1`` (integers: value bits below
        the sign, i.e. ``bits - 1`` signed, ``bits`` unsigned)."""
        if self.is_integer:
            return self.bits - 1 if self.signed else self.bits
        return self.precision - 1

    @property
    def exponent_bits(self) -> int:
        """Width of the biased exponent field (0 for integer formats)."""
        if self.is_integer:
            return 0
        return self.bits - 1 - self.mantissa_bits

    @property
    def bias(self) -> int:
        """Exponent bias: the field value of ``2**0`` is ``bias`` (``1 - emin``)."""
        if self.is_integer:
            return 0
        return 1 - self.emin

    @property
    def container_bits(self) -> int:
        """Bits of the storage container (tf32: 32, s4/u4: 8); ``bits_dtype``'s width."""
        return self.storage.itemsize * 8

    @property
    def element_bits(self) -> int:
        """Bits one element occupies when packed into registers or memory: the encoding plus
        its pad bits (tf32 32, fp16 16, int4 4, uint1 1)."""
        return self.bits + self.pad_bits

    @property
    def names(self) -> tuple[str, ...]:
        """Every name :func:`get_format` resolves to this format: canonical name first."""
        return (self.name, *self.aliases)

    @property
    def max_normal(self) -> float:
        """Largest finite value (integers: ``2**(bits-1) - 1`` or ``2**bits - 1``; e4m3: 448)."""
        if self.is_integer:
            return float(2 ** (self.bits - 1 if self.signed else self.bits) - 1)
        # In "fn" formats the all-ones significand of the top binade is NaN.
        top_ulps = 2 if self.nan_encoding == "fn" else 1
        return float(2**self.emax * (2 - top_ulps * 2.0 ** (1 - self.precision)))

    @property
    def min_normal(self) -> float:
        """Smallest positive normal value ``2**emin`` (integers: 1)."""
        return 1.0 if self.is_integer else float(2.0**self.emin)

    @property
    def min_subnormal(self) -> float:
        """Smallest positive value ``2**(emin - p + 1)`` (integers: 1)."""
        return 1.0 if self.is_integer else float(2.0 ** (self.emin - self.precision + 1))

    @property
    def min_value(self) -> float:
        """Most negative finite value (``-max_normal``; integers: ``-2**(bits-1)`` or 0)."""
        if self.is_integer:
            return -float(2 ** (self.bits - 1)) if self.signed else 0.0
        return -self.max_normal

    @property
    def unit_roundoff(self) -> float:
        """``u = 2**-p``: relative error bound of round-to-nearest in the normal range."""
        return float(2.0**-self.precision)

    @property
    def bits_dtype(self) -> np.dtype:
        """Unsigned integer dtype of :func:`to_bits` (the container width)."""
        return np.dtype(f"uint{self.container_bits}")

    @property
    def max_exponent_field(self) -> int:
        """Largest biased exponent field that encodes finite numbers (all ones minus one where
        the all-ones field is Inf/NaN; all ones for ``"fn"``; 0 for integers)."""
        top = (1 << self.exponent_bits) - 1
        return top if self.nan_encoding == "fn" else max(top - 1, 0)

    @property
    def inf_bits(self) -> int | None:
        """Encoding of +Inf in the container (None where Inf has no encoding)."""
        if not self.has_inf:
            return None
        return ((1 << self.exponent_bits) - 1) << (self.mantissa_bits + self.pad_bits)

    @property
    def bit_layout(self) -> BitLayout:
        """Field positions and masks of the encoding in its container (see :class:`BitLayout`)."""
        return BitLayout(
            container_bits=self.container_bits,
            exponent_bits=self.exponent_bits,
            mantissa_bits=self.mantissa_bits,
            pad_bits=self.pad_bits,
            signed=self.signed,
            max_finite_field=self.max_exponent_field,
        )

    def __str__(self) -> str:
        return self.name


def _float(
    name: str,
    bits: int,
    p: int,
    emin: int,
    emax: int,
    storage: Any,
    *,
    ptx: str,
    aliases: tuple[str, ...],
    quiet_nan: int,
    gpu_nan: int | None = None,
    has_inf: bool = True,
    nan_encoding: str = "ieee",
    pad_bits: int = 0,
) -> Format:
    return Format(
        name,
        bits,
        p,
        emin,
        emax,
        has_inf,
        True,
        False,
        np.dtype(storage),
        nan_encoding,
        ptx=ptx,
        aliases=aliases,
        pad_bits=pad_bits,
        ieee_quiet_nan_bits=quiet_nan,
        gpu_canonical_nan_bits=gpu_nan,
    )


def _int(
    name: str, bits: int, storage: Any, *, ptx: str, aliases: tuple[str, ...], signed: bool = True
) -> Format:
    p = bits - 1 if signed else bits
    return Format(
        name,
        bits,
        p,
        0,
        p - 1,
        False,
        False,
        True,
        np.dtype(storage),
        "none",
        ptx=ptx,
        aliases=aliases,
        signed=signed,
        has_subnormals=False,
    )


#: Canonical formats by name, in registration order (the first format whose storage dtype is a
#: dtype's own name claims that dtype: float32 means fp32, not tf32; int8 means int8, not s4).
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        _float(
            "fp64", 64, 53, -1022, 1023, np.float64, ptx="f64",
            aliases=("f64", "float64", "double", "binary64"),
            quiet_nan=0x7FF8_0000_0000_0000,
        ),
        _float(
            "fp32", 32, 24, -126, 127, np.float32, ptx="f32",
            aliases=("f32", "float32", "single", "binary32"),
            quiet_nan=0x7FC0_0000, gpu_nan=0x7FFF_FFFF,
        ),
        _float(
            "tf32", 19, 11, -126, 127, np.float32, ptx="tf32", aliases=("tensorfloat32",),
            quiet_nan=0x7FC0_0000, pad_bits=13,
        ),
        _float(
            "fp16", 16, 11, -14, 15, np.float16, ptx="f16",
            aliases=("f16", "float16", "half", "binary16"),
            quiet_nan=0x7E00, gpu_nan=0x7FFF,
        ),
        _float(
            "bf16", 16, 8, -126, 127, ml_dtypes.bfloat16, ptx="bf16",
            aliases=("bfloat16",), quiet_nan=0x7FC0,
        ),
        _float(
            "e4m3", 8, 4, -6, 8, ml_dtypes.float8_e4m3fn, ptx="e4m3",
            aliases=("float8_e4m3fn", "fp8_e4m3", "fp8_e4m3fn", "e4m3fn"),
            quiet_nan=0x7F, has_inf=False, nan_encoding="fn",
        ),
        _float(
            "e5m2", 8, 3, -14, 15, ml_dtypes.float8_e5m2, ptx="e5m2",
            aliases=("float8_e5m2", "fp8_e5m2"), quiet_nan=0x7E,
        ),
        _int("int8", 8, np.int8, ptx="s8", aliases=("s8",)),
        _int("int32", 32, np.int32, ptx="s32", aliases=("s32",)),
        _int("uint8", 8, np.uint8, ptx="u8", aliases=("u8",), signed=False),
        _int("int4", 4, np.int8, ptx="s4", aliases=("s4",)),
        _int("uint4", 4, np.uint8, ptx="u4", aliases=("u4",), signed=False),
        _int("uint1", 1, np.uint8, ptx="b1", aliases=("b1", "u1"), signed=False),
    )
}  # fmt: skip

#: Alternative names accepted by :func:`get_format` (every ``Format.aliases`` entry).
ALIASES: dict[str, str] = {a: f.name for f in FORMATS.values() for a in f.aliases}

#: Every accepted name (canonical or alias) -> Format.
_BY_NAME: dict[str, Format] = {n: f for f in FORMATS.values() for n in f.names}

# Narrow float dtypes whose conversion to float64 is exact (decoding, not rounding).
_EXACT_FLOAT_DTYPES = frozenset(
    np.dtype(t)
    for t in (
        np.float16,
        np.float32,
        np.float64,
        ml_dtypes.bfloat16,
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.float8_e5m2,
        ml_dtypes.float8_e4m3,
        ml_dtypes.float8_e4m3fnuz,
        ml_dtypes.float8_e5m2fnuz,
        ml_dtypes.float8_e4m3b11fnuz,
    )
)


def get_format(fmt: str | Format | Any) -> Format:
    """Return the :class:`Format` named by ``fmt``.

    Args:
        fmt: a canonical name or alias (case-insensitive; e.g. ``"fp16"``, ``"f16"``,
            ``"half"``, ``"float16"``), a :class:`Format`, or a numpy / ml_dtypes dtype (or
            scalar type) whose name is one of those: ``float32`` is fp32 (tf32 has no dtype of
            its own), ``int8`` is int8, ``ml_dtypes.int4`` is int4.

    Raises:
        ValueError: ``fmt`` names no known format; the message lists the valid names.
    """
    if isinstance(fmt, Format):
        return fmt
    if fmt is None:  # np.dtype(None) would silently mean float64
        pass
    elif isinstance(fmt, str):
        found = _BY_NAME.get(fmt.strip().lower())
        if found is not None:
            return found
    else:
        try:
            dtype = np.dtype(fmt)
        except (TypeError, ValueError):
            dtype = None
        if dtype is not None and dtype.name in _BY_NAME:
            return _BY_NAME[dtype.name]
    guess = ""
    if isinstance(fmt, str):
        close = difflib.get_close_matches(fmt.strip().lower(), list(_BY_NAME), n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
    raise ValueError(
        f"unknown format {fmt!r}; {guess}expected one of {sorted(FORMATS)} "
        f"(aliases {sorted(ALIASES)}), a Format, or a dtype of one of them"
    )


def _named_format(fmt: Any) -> Format:
    """:func:`get_format`, its error prefixed with the argument: ``fmt='fp17': ...``."""
    try:
        return get_format(fmt)
    except ValueError as exc:
        raise ValueError(f"fmt={fmt!r}: {exc}") from None


def _named_mode(mode: Any) -> Any:
    """A rounding mode in any case ("RNE" is "rne")."""
    return mode.lower() if isinstance(mode, str) else mode


def _check_mode(mode: str, rng: Any) -> None:
    if mode not in ROUNDING_MODES:
        raise ValueError(f"mode={mode!r}: unknown rounding mode; expected one of {ROUNDING_MODES}")
    if mode == "stochastic":
        if rng is None:
            raise ValueError(
                "mode='stochastic' needs rng=numpy.random.Generator (e.g. "
                "numpy.random.default_rng(seed)); got rng=None"
            )
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")


def _is_ml_dtypes_number(dt: np.dtype) -> bool:
    """True for ml_dtypes' own numeric dtypes (int2/int4/uint4 and the narrow floats such as
    float8_e3m4, float4_e2m1fn, float8_e8m0fnu), which numpy lists as kind "V": all hold at
    most 8 significant bits and an exponent within float64's, so float64 holds them exactly."""
    if dt.kind != "V":
        return False
    for info in (ml_dtypes.iinfo, ml_dtypes.finfo):
        try:
            info(dt)
        except (ValueError, TypeError):
            continue
        return True
    return False


def inexact_in_float64(src: Any, as_float: Any, xp: Any = np) -> Any:
    """Mask of the 64-bit integers ``src`` that their float64 conversion ``as_float`` does not
    hold exactly. Integers above 2**53 convert exactly only when their low bits are zero, so
    the conversion is compared back in integers (2**63 and 2**64 themselves are out of range);
    ``xp``: numpy or CuPy, as the arrays are."""
    limit = 2.0**63 if src.dtype.kind == "i" else 2.0**64
    exact = (as_float < limit) & (as_float >= -limit)
    exact &= xp.where(exact, as_float, 0).astype(src.dtype) == src
    return ~exact


def _as_float64(x: Any, argname: str = "x") -> np.ndarray:
    """``x`` as a float64 array, refusing inputs that float64 cannot hold exactly."""
    refuse_masked(x, argname, "precision.formats")
    arr = np.asarray(x)
    dt = arr.dtype
    if dt in _EXACT_FLOAT_DTYPES or (dt.kind == "f" and dt.itemsize <= 8):
        return arr.astype(np.float64, copy=False)  # widening a binary float is exact
    if dt.kind == "b" or _is_ml_dtypes_number(dt):  # every value exact in float64
        return arr.astype(np.float64)
    if dt.kind in "iu":
        if dt.itemsize <= 4:
            return arr.astype(np.float64)
        # (the rule precision.reference applies too: both accept and refuse the same values)
        out = arr.astype(np.float64)
        inexact = inexact_in_float64(arr, out)
        if inexact.any():
            raise ValueError(
                f"{argname} holds the integer {int(arr[inexact].flat[0])}, which float64 cannot "
                "represent exactly (integers are exact up to 2**53 in magnitude, and above "
                "only when their low bits are zero); convert it explicitly first"
            )
        return out
    raise TypeError(
        f"{argname} must be a float16/float32/float64 (or ml_dtypes float, or integer) array; "
        f"got dtype {dt}"
    )


def _round_magnitude(
    s: np.ndarray, neg: np.ndarray | None, mode: str, rng: np.random.Generator | None
) -> np.ndarray:
    """Round non-negative ``s`` (magnitudes in units of the target quantum) to integers.

    ``neg`` is the sign of the original value (needed by ``ru``/``rd`` only). Inputs may be
    Inf/NaN; they come back as Inf/NaN.
    """
    if mode == "rne":
        return np.rint(s)
    if mode == "rz":
        return np.floor(s)
    if mode in ("ru", "rd"):
        lo = np.floor(s)
        away = np.ceil(s)
        assert neg is not None  # the caller passes the signs for ru / rd
        toward_inf = ~neg if mode == "ru" else neg  # rounding away from zero increases |x|
        return np.asarray(np.where(toward_inf, away, lo))
    lo = np.floor(s)
    with np.errstate(invalid="ignore"):  # Inf - Inf for Inf input; the result stays Inf
        frac = s - lo  # exact: floor(s) lies on the float64 grid of s; 0 <= frac < 1
    if mode == "rna":
        return lo + (frac >= 0.5)
    # stochastic: P(up) = frac (quantised to multiples of 2**-53 by the draw)
    assert rng is not None  # _check_mode refuses stochastic rounding without a Generator
    return lo + (rng.random(s.shape) < frac)


def _round_integer(
    x: np.ndarray, fmt: Format, mode: str, rng: np.random.Generator | None
) -> np.ndarray:
    neg = np.signbit(x)
    r = _round_magnitude(np.abs(x), neg, mode, rng)
    r = np.where(neg, -r, r)
    r = np.clip(r, fmt.min_value, fmt.max_normal)
    r[np.isnan(r)] = 0.0
    r += 0.0  # -0.0 + 0.0 == +0.0 under round-to-nearest: integers have no signed zero
    return r


def _round_float(
    x: np.ndarray, fmt: Format, mode: str, rng: np.random.Generator | None
) -> np.ndarray:
    p = fmt.precision
    ax = np.abs(x)
    # Unbiased exponent of |x| from the float64 exponent field (float64 subnormals have
    # field 0; they lie far below every narrower target's range, so the clamp covers them).
    # Clamp to [emin, emax + 1]: below emin the target quantum is the subnormal one; above,
    # everything overflows anyway (and Inf/NaN, field 2047, keep finite scale factors).
    e_field = ax.view(np.uint64) >> np.uint64(52)
    np.clip(e_field, np.uint64(fmt.emin + 1023), np.uint64(fmt.emax + 1 + 1023), out=e_field)
    # quantum = 2**(e - p + 1). Build 2**-(e-p+1) and 2**(e-p+1) directly as float64 bits;
    # both are normal numbers for every format here, so the products below are exact.
    inv_quantum = ((np.uint64(2045 + p) - e_field) << np.uint64(52)).view(np.float64)
    e_field -= np.uint64(p - 1)
    e_field <<= np.uint64(52)
    quantum = e_field.view(np.float64)
    s = ax * inv_quantum  # |x| / quantum, exact
    neg = np.signbit(x) if mode in ("ru", "rd") else None
    y = _round_magnitude(s, neg, mode, rng)
    y *= quantum  # exact: an integer of <= p + 1 bits times a power of two

    maxn = fmt.max_normal
    over = y > maxn  # rounded with unbounded exponent, then compared (IEEE overflow rule)
    if over.any():
        idx = np.nonzero(over)
        is_inf = np.isinf(ax[idx])
        if not fmt.has_inf:
            fill = np.where(is_inf, np.nan, maxn)  # saturate; Inf has no encoding -> NaN
        elif mode in ("rne", "rna", "stochastic"):
            fill = np.full(is_inf.shape, np.inf)
        elif mode == "rz":
            fill = np.where(is_inf, np.inf, maxn)
        else:
            toward_inf = ~np.signbit(x[idx]) if mode == "ru" else np.signbit(x[idx])
            fill = np.where(is_inf | toward_inf, np.inf, maxn)
        y[idx] = fill
    return np.copysign(y, x, out=y)


def round(
    x: Any, fmt: str | Format | Any, mode: str = "rne", *, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Round ``x`` once, exactly, into ``fmt`` and return the rounded values as float64.

    Args:
        x: array-like of float64/float32 (also float16, ml_dtypes floats, or integers of
            magnitude <= 2**53), any shape. Each element is taken as its exact value.
        fmt: target format (name, alias, :class:`Format` or dtype; see :func:`get_format`).
        mode: one of :data:`ROUNDING_MODES` (see the module docstring for overflow, e4m3
            saturation, NaN/Inf and integer rules).
        rng: a :class:`numpy.random.Generator`, required for ``mode="stochastic"``; exactly
            one ``rng.random(x.shape)`` draw is consumed per call (none when ``fmt`` is fp64,
            where rounding float64 input is the identity). Ignored by other modes.

    Returns:
        float64 array of ``x``'s shape; every element is a value of ``fmt`` (or ±Inf/NaN
        where ``fmt`` has them), namely the correctly rounded ``x`` under ``mode``.

    Raises:
        ValueError: unknown format or mode; stochastic mode without ``rng``.
        TypeError: ``x`` has a dtype float64 cannot hold exactly (complex, longdouble, ...).
    """
    f = _named_format(fmt)
    mode = _named_mode(mode)
    _check_mode(mode, rng)
    x64 = _as_float64(x)
    if not f.is_integer and f.precision >= 53:  # fp64: float64 input is already a fp64 value
        return x64.copy()
    if not f.is_integer and (f.emin - f.precision + 1 < -1022 or f.emax > 1021):
        raise ValueError(
            f"fmt: {f.name} needs float64's exponent range plus margin for "
            f"exact scaling (emin - p + 1 >= -1022, emax <= 1021); got emin={f.emin}, "
            f"p={f.precision}, emax={f.emax}"
        )
    flat = x64.reshape(-1)  # 1-D so that 0-d input also gets in-place array arithmetic
    if f.is_integer:
        out = _round_integer(flat, f, mode, rng)
    else:
        out = _round_float(flat, f, mode, rng)
    return out.reshape(x64.shape)


def refuse_masked(x: Any, name: str, user: str) -> None:
    """``TypeError`` for a numpy masked array: every numeric entry point would read the
    values under its mask as if they were data (the mask silently lost)."""
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(
            f"{name} is a masked array; {user} would read the values under its mask as data: "
            f"pass {name}.filled(value), or only the unmasked part"
        )


def require_real_dtype(dtype: Any, name: str, user: str, complex_hint: str) -> None:
    """``TypeError`` unless ``dtype`` is a real numeric dtype (bool, integer, float, ml_dtypes
    float): the message names the argument ``name`` and the function ``user``; for a complex
    dtype it goes on with ``complex_hint`` (what ``user`` takes and what to do instead)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise TypeError(f"{name} has complex dtype {dtype}; {user} {complex_hint}")
    if not np.can_cast(dtype, np.float64, casting="same_kind"):
        raise TypeError(
            f"{name} has dtype {dtype}; {user} takes real numeric arrays (float, integer or bool)"
        )


def cast(
    x: Any, fmt: str | Format | Any, mode: str = "rne", *, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Round ``x`` into ``fmt`` (see :func:`round`) and return it in ``fmt.storage`` dtype.

    The conversion after rounding is exact: the values are already representable, so the
    numpy/ml_dtypes cast cannot round again. tf32 comes back as float32 whose 13 low
    significand bits are zero (a NaN as ``ieee_quiet_nan_bits``, 0x7FC00000, as
    :func:`to_bits` writes it: a payload in the pad would break that); integer formats as
    int8/int32 (saturated, NaN -> 0).
    """
    f = _named_format(fmt)
    out = round(x, f, mode, rng=rng).astype(f.storage)
    if f.pad_bits and f.ieee_quiet_nan_bits is not None and np.isnan(out).any():
        quiet = np.array(f.ieee_quiet_nan_bits, f.bits_dtype).view(f.storage)
        out = np.where(np.isnan(out), quiet, out)[()]  # (a scalar stays a scalar)
    return out


# ----------------------------------------------------------------------------- bit encodings


def _layout(f: Format) -> tuple[int, int, int]:
    """(container bits, exponent field bits, trailing significand bits incl. pad) of a float
    encoding: tf32 is encoded as the fp32 word of its value (its 13 pad bits are then zero)."""
    return f.container_bits, f.exponent_bits, f.mantissa_bits + f.pad_bits


def to_bits(values: Any, fmt: str | Format | Any) -> np.ndarray:
    """Encode values of ``fmt`` as unsigned integers (``fmt.bits_dtype``).

    fp64 -> uint64, fp32/tf32 -> uint32 (tf32 in its fp32 container, low 13 bits zero),
    fp16/bf16 -> uint16, e4m3/e5m2 -> uint8, integers -> two's complement (signed) or plain
    binary (unsigned) in the low ``fmt.bits`` bits of the container (int4 -3 -> ``0xD``).
    Every NaN is written as ``fmt.ieee_quiet_nan_bits``, the positive quiet NaN: fp64
    ``0x7FF8000000000000``, fp32/tf32 ``0x7FC00000``, fp16 ``0x7E00``, bf16 ``0x7FC0``,
    e4m3 ``0x7F``, e5m2 ``0x7E`` (not the GPU's ``gpu_canonical_nan_bits``). Signed zeros
    are kept.

    Raises:
        ValueError: some value is not exactly representable in ``fmt`` (round it first).
    """
    f = get_format(fmt)
    v = _as_float64(values, "values")
    rounded = round(v, f, "rne")
    bad = ~((rounded == v) | (np.isnan(rounded) & np.isnan(v)))
    if f.is_integer:
        bad |= np.isnan(v)
    if bad.any():
        first = float(v[bad].reshape(-1)[0])  # (boolean indexing works on 0-d arrays too)
        raise ValueError(
            f"values: {int(bad.sum())} element(s) are not values of {f.name} "
            f"(first: {first!r}); round them with precision.formats.round first"
        )
    if f.is_integer:
        word = v.astype(np.int64).view(np.uint64) & np.uint64((1 << f.bits) - 1)
        return word.astype(f.bits_dtype)
    flat = v.reshape(-1)
    nan = np.isnan(flat)
    flat = np.where(nan, 0.0, flat)  # contiguous float64, NaN fields written below
    out = flat.view(np.uint64) if f.container_bits == 64 else _encode_float(flat, f)
    assert f.ieee_quiet_nan_bits is not None  # every float format has a NaN encoding
    out[nan] = f.ieee_quiet_nan_bits
    return out.reshape(v.shape)


def _encode_float(v: np.ndarray, f: Format) -> np.ndarray:
    """Re-pack float64 ``v`` (values of ``f``, NaN already masked by the caller) into ``f``'s
    layout, using integer operations on the float64 fields only."""
    nbits, ebits, mbits = _layout(f)
    u = v.view(np.uint64)
    e64 = (u >> np.uint64(52)) & np.uint64(0x7FF)  # biased float64 exponent field
    m64 = u & np.uint64((1 << 52) - 1)  # float64 trailing significand
    drop = np.uint64(52 - mbits)  # significand bits float64 has and f has not
    # binade exponent e = e64 - 1023; normal in f iff e >= emin, i.e. e64 >= emin + 1023
    normal = e64 >= np.uint64(f.emin + 1023)
    # subnormal in f: value = (2**52 + m64) * 2**(e - 52) = mfield * 2**(emin - mbits), so
    # mfield = (2**52 + m64) >> (52 - mbits + emin - e); zero (e64 = 0) shifts out entirely.
    e_sub = np.minimum(e64, np.uint64(f.emin + 1022))  # keeps the unused normal lanes >= 0
    sub_shift = np.minimum(np.uint64(52 - mbits + f.emin + 1023) - e_sub, np.uint64(63))
    mfield = np.where(normal, m64 >> drop, (m64 | np.uint64(1 << 52)) >> sub_shift)
    efield = np.where(normal, e64 - np.uint64(1023 - (1 - f.emin)), np.uint64(0))
    special = e64 == np.uint64(0x7FF)  # Inf (NaN was masked by the caller)
    efield[special] = (1 << ebits) - 1
    mfield[special] = 0
    word = ((u >> np.uint64(63)) << np.uint64(nbits - 1)) | (efield << np.uint64(mbits)) | mfield
    return word.astype(f"uint{nbits}")


def from_bits(bits: Any, fmt: str | Format | Any) -> np.ndarray:
    """Decode unsigned-integer encodings of ``fmt`` into float64 values (exact).

    Args:
        bits: integer array-like with values in ``[0, 2**(fmt.bits + fmt.pad_bits))`` (see
            :func:`to_bits`; tf32 uses the fp32 layout and needs its 13 low bits zero; int4 /
            uint4 use the low 4 bits of a byte).
        fmt: the format.

    Returns:
        float64 array: the encoded values; NaN encodings (any payload) decode to NaN;
        integer formats decode two's complement (signed) or plain binary (unsigned).
    """
    f = get_format(fmt)
    b = np.asarray(bits)
    if b.dtype.kind not in "iu":
        raise TypeError(f"bits must be an integer array; got dtype {b.dtype}")
    nbits = f.element_bits
    if b.size and (int(b.min()) < 0 or int(b.max()) >= 2**nbits):
        raise ValueError(
            f"bits: {f.name} encodings lie in [0, 2**{nbits}); got values in "
            f"[{int(b.min())}, {int(b.max())}]"
        )
    u = b.astype(np.uint64)
    if f.is_integer:
        val = u.astype(np.int64)
        if f.signed:  # two's complement of width f.bits
            val = np.where(val >= 1 << (f.bits - 1), val - (1 << f.bits), val)
        return val.astype(np.float64)
    if f.container_bits == 64:
        return u.view(np.float64).copy()
    if f.pad_bits and np.any(u & np.uint64(f.bit_layout.pad_mask)):
        raise ValueError(
            f"bits: {f.name} encodings ({f.container_bits}-bit container) need the "
            f"{f.pad_bits} low bits zero"
        )
    nbits, ebits, mbits = _layout(f)
    emask = (1 << ebits) - 1
    efield = ((u >> np.uint64(mbits)) & np.uint64(emask)).astype(np.int64)
    mfield = (u & np.uint64((1 << mbits) - 1)).astype(np.float64)
    normal = efield > 0
    sig = np.where(normal, mfield + 2.0**mbits, mfield)
    exp = np.maximum(efield, 1) - (1 - f.emin) - mbits
    val = np.asarray(np.ldexp(sig, exp.astype(np.int32)))  # 0-d input: an array, not a scalar
    if f.nan_encoding == "fn":
        val[(efield == emask) & (mfield == 2**mbits - 1)] = np.nan
    else:
        top = efield == emask
        val[top] = np.where(mfield[top] == 0, np.inf, np.nan)
    neg = (u >> np.uint64(nbits - 1)) != 0
    return np.where(neg, -val, val)
