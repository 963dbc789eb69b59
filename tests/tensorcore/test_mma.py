"""The emulator against an independent exact-rational model, known answers and its own contract.

Hardware fidelity is tested in test_recorded.py against recorded H200 outputs. Here the
vectorised float64 core is checked against a plain ``fractions.Fraction`` transcription of the
published block model (Khattak & Mikaitis 2025; MMA-Sim 2025), written independently in this
file, so that an arithmetic slip in the fast path (scaling, truncation, rounding, subnormals)
cannot hide behind the recorded data's coverage.
"""

from __future__ import annotations

import math
import zlib
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from precision import mma
from precision.tensorcore import get_arch

BF16 = ml_dtypes.bfloat16
F32 = np.float32


# --------------------------------------------------------------------------- exact oracle


def _lead_exp(x: float, emin: int) -> int:
    _, e = math.frexp(x)
    return max(e - 1, emin)


def _oracle_block(a, b, c, *, frac_bits, e_zero, in_emin, acc_emin):
    """Exact sum of the truncated terms of one block, as a Fraction (finite inputs only)."""
    terms = []
    for x, y in zip(a, b, strict=True):
        p = Fraction(x) * Fraction(y)
        e = e_zero if p == 0 else _lead_exp(x, in_emin) + _lead_exp(y, in_emin)
        terms.append((p, e))
    terms.append((Fraction(c), e_zero if c == 0 else _lead_exp(c, acc_emin)))
    big_e = max(e for _, e in terms)
    quantum = Fraction(2) ** (big_e - frac_bits)
    total = Fraction(0)
    for p, _ in terms:
        n = abs(p) // quantum
        total += n * quantum if p >= 0 else -n * quantum
    return total


def _oracle_rz_fp32(v: Fraction) -> float:
    if v == 0:
        return 0.0
    x = abs(v)
    e = max(math.floor(math.log2(x)) if x.denominator == 1 else _floor_log2(x), -126)
    if e > 127:
        return math.copysign(math.inf, v)
    q = Fraction(2) ** (e - 23)
    r = (x // q) * q
    if r == 0:
        return 0.0
    return float(r) if v > 0 else -float(r)


def _floor_log2(x: Fraction) -> int:
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    if Fraction(2) ** (e + 1) <= x:
        e += 1
    return e


def _oracle_rne_fp16(v: Fraction) -> float:
    if v == 0:
        return 0.0
    x = abs(v)
    e = max(_floor_log2(x), -14)
    q = Fraction(2) ** (e - 10)
    n, rem = divmod(x, q)
    if rem * 2 > q or (rem * 2 == q and n % 2 == 1):
        n += 1
    r = n * q
    if r >= 2**16:
        return math.copysign(math.inf, v)
    if r == 0:
        return 0.0
    return float(r) if v > 0 else -float(r)


def _oracle_chain(a_row, b_col, c, *, block, frac_bits, e_zero, in_emin, acc_emin, out):
    for k0 in range(0, len(a_row), block):
        s = _oracle_block(
            a_row[k0 : k0 + block],
            b_col[k0 : k0 + block],
            c,
            frac_bits=frac_bits,
            e_zero=e_zero,
            in_emin=in_emin,
            acc_emin=acc_emin,
        )
        c = out(s)
    return c


def _wide_values(rng, shape, dtype, lo, hi):
    mag = np.exp2(rng.integers(lo, hi, size=shape)) * rng.uniform(1, 2, size=shape)
    sign = rng.choice([-1.0, 1.0], size=shape)
    zero = rng.random(shape) < 0.1
    return np.where(zero, 0.0, sign * mag).astype(dtype)


CASES = [
    # (input dtype, fmt, in_emin, exponent range, accumulate dtype, acc_emin)
    (np.float16, None, -14, (-26, 14), F32, -126),
    (BF16, None, -126, (-140, 60), F32, -126),
    (F32, "tf32", -126, (-140, 60), F32, -126),
    (np.float16, None, -14, (-26, 8), np.float16, -14),
]


#: (block L, fraction bits F, e_zero) of the instructions below as published (MMA-Sim v2
#: ``nv_ptx/sim.py``, /work/shared/reference/tensorcore_arithmetic.md §3.3: L = 32 (Hopper) or
#: 16 (Ampere) bytes / itemsize, F = 25 / 24, e_zero -133 / -132 for fp32 out, -21 / -20 for
#: fp16 out): typed here, not read from the model under test, so a wrong constant in
#: precision.tensorcore.arch fails this test.
PUBLISHED = {
    ("sm90", "fp16", "fp32"): (16, 25, -133),
    ("sm90", "bf16", "fp32"): (16, 25, -133),
    ("sm90", "tf32", "fp32"): (8, 25, -133),
    ("sm90", "fp16", "fp16"): (16, 25, -21),
    ("sm80", "fp16", "fp32"): (8, 24, -132),
    ("sm80", "bf16", "fp32"): (8, 24, -132),
    ("sm80", "tf32", "fp32"): (4, 24, -132),
    ("sm80", "fp16", "fp16"): (8, 24, -20),
}


@pytest.mark.parametrize("case", CASES, ids=["f16-f32", "bf16-f32", "tf32-f32", "f16-f16"])
@pytest.mark.parametrize("arch", ["sm90", "sm80"])
def test_chain_matches_exact_rational_model(case, arch):
    dtype, fmt, in_emin, (lo, hi), acc_dtype, acc_emin = case
    # a fixed seed per case (crc32 of its name: the same in every run, unlike hash())
    rng = np.random.default_rng(zlib.crc32(f"{arch}/{dtype}/{fmt}/{acc_dtype}".encode()))
    in_name = fmt or {np.float16: "fp16", BF16: "bf16"}[dtype]
    acc_name = "fp32" if acc_dtype is F32 else "fp16"
    block, frac_bits, e_zero = PUBLISHED[arch, in_name, acc_name]
    model = get_arch(arch).instruction(in_name, acc_name)
    m, n, k = 6, 5, 2 * model.k
    a = _wide_values(rng, (m, k), dtype, lo, hi)
    b = _wide_values(rng, (k, n), dtype, lo, hi)
    if fmt == "tf32":  # keep the low 13 bits zero: this test is about the arithmetic
        a = (a.view(np.uint32) & np.uint32(0xFFFFE000)).view(F32)
        b = (b.view(np.uint32) & np.uint32(0xFFFFE000)).view(F32)
    c = _wide_values(rng, (m, n), acc_dtype, lo + (0 if acc_dtype is F32 else 10), hi)
    got = mma(a, b, c, arch=arch, fmt=fmt)
    out = _oracle_rz_fp32 if acc_dtype is F32 else _oracle_rne_fp16
    for i in range(m):
        for j in range(n):
            want = _oracle_chain(
                [float(x) for x in a[i]],
                [float(x) for x in b[:, j]],
                float(c[i, j]),
                block=block,
                frac_bits=frac_bits,
                e_zero=e_zero,
                in_emin=in_emin,
                acc_emin=acc_emin,
                out=out,
            )
            assert (
                np.array(want, acc_dtype).view(f"u{np.dtype(acc_dtype).itemsize}")
                == got[i, j : j + 1].view(f"u{np.dtype(acc_dtype).itemsize}")[0]
            ), (i, j, want, got[i, j])


def _one(a_vals, b_vals, c_val, dtype=np.float16, acc=F32, k=16):
    a = np.zeros((1, k), dtype)
    b = np.zeros((k, 1), dtype)
    a[0, : len(a_vals)] = a_vals
    b[: len(b_vals), 0] = b_vals
    return mma(a, b, np.array([[c_val]], acc))


def _bits(x):
    x = np.asarray(x)
    return int(x.view(f"u{x.dtype.itemsize}").reshape(-1)[0])


def test_known_answers_from_the_published_model():
    # Worked vectors of tensorcore_arithmetic.md §8.6 (exact rational derivations).
    assert _bits(_one([1, 1], [2, 3 * 2.0**-24], 0.0)) == 0x40000000
    assert _bits(_one([1, 1], [-2, -3 * 2.0**-24], 0.0)) == 0xC0000000
    assert _bits(_one([1], [1], -(1 - 2.0**-24))) == 0x33800000
    assert _bits(_one([2.0**-23, -(2.0**-32)], [2.0**-126] * 2, 0.0, BF16)) == 0x00000000
    assert _bits(_one([2.0**-23, -(2.0**-33)], [2.0**-126] * 2, 0.0, BF16)) == 0x00000001
    for kk, want in ((22, 0x0001), (23, 0x0000)):
        got = _one([2.0**-11, 2.0**-kk], [2.0**-14, 2.0**-24], 0.0, acc=np.float16)
        assert _bits(got) == want


def test_int8_wrap_and_satfinite_match_python_integers():
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, size=(4, 64)).astype(np.int8)
    b = rng.integers(-128, 128, size=(64, 3)).astype(np.int8)
    c = rng.integers(-(2**31), 2**31, size=(4, 3)).astype(np.int32)
    wrap = mma(a, b, c)
    sat = mma(a, b, c, satf=True)
    for i in range(4):
        for j in range(3):
            acc = int(c[i, j])
            exact = acc + sum(int(x) * int(y) for x, y in zip(a[i], b[:, j], strict=True))
            assert int(wrap[i, j]) == (exact + 2**31) % 2**32 - 2**31
            for k0 in (0, 32):
                acc += sum(
                    int(x) * int(y)
                    for x, y in zip(a[i, k0 : k0 + 32], b[k0 : k0 + 32, j], strict=True)
                )
                acc = min(max(acc, -(2**31)), 2**31 - 1)
            assert int(sat[i, j]) == acc


def test_float_satf_clamps_after_each_instruction():
    # 2^100 · 2^100 overflows fp32: +Inf without satf, +MAX_NORM with it.
    big = _one([2.0**100], [2.0**100], 0.0, BF16)
    assert np.isposinf(big[0, 0])
    a = np.zeros((1, 32), BF16)
    b = np.zeros((32, 1), BF16)
    a[0, 0], b[0, 0] = 2.0**100, 2.0**100  # first instruction overflows ...
    a[0, 16], b[16, 0] = -1.0, 1.0  # ... the second adds -1 to the clamped value
    sat = mma(a, b, np.zeros((1, 1), F32), satf=True)
    assert sat[0, 0] == np.finfo(F32).max
    assert np.isposinf(mma(a, b, np.zeros((1, 1), F32))[0, 0])
    a[0, 1], b[1, 0] = np.inf, 0.0  # Inf·0 = NaN in the first instruction -> +0
    nan = mma(a, b, np.zeros((1, 1), F32), satf=True)
    assert _bits(nan) == _bits(np.float32(-1.0))  # +0 then + (-1·1)
    assert np.isnan(mma(a, b, np.zeros((1, 1), F32))[0, 0])


def test_chunked_large_product_equals_tilewise_product():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((96, 64)).astype(np.float16)
    b = rng.standard_normal((64, 1100)).astype(np.float16)
    c = rng.standard_normal((96, 1100)).astype(F32)
    whole = mma(a, b, c)
    tiles = mma(a.reshape(6, 16, 64), b, c.reshape(6, 16, 1100))
    assert np.array_equal(whole.view(np.uint32), tiles.reshape(96, 1100).view(np.uint32))


def test_batch_axes_broadcast():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 1, 16, 16)).astype(np.float16)
    b = rng.standard_normal((4, 16, 8)).astype(np.float16)
    c = np.zeros((16, 8), F32)
    out = mma(a, b, c)
    assert out.shape == (3, 4, 16, 8) and out.dtype == F32
    assert np.array_equal(out[2, 3], mma(a[2, 0], b[3], c))


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "words"),
    [
        (
            (np.zeros((2, 16), F32), np.zeros((16, 2), F32), np.zeros((2, 2), F32)),
            {},
            TypeError,
            "fmt='tf32'",
        ),
        (
            (np.zeros((2, 16), np.int16), np.zeros((16, 2), np.int16), np.zeros((2, 2), F32)),
            {},
            TypeError,
            "a has dtype int16",
        ),
        (
            (np.zeros((2, 16), np.float16), np.zeros((16, 2), BF16), np.zeros((2, 2), F32)),
            {},
            TypeError,
            "b is bf16",
        ),
        (
            (np.zeros((2, 16), np.float16), np.zeros((15, 2), np.float16), np.zeros((2, 2), F32)),
            {},
            ValueError,
            "b has 15 rows",
        ),
        (
            (np.zeros((2, 12), np.float16), np.zeros((12, 2), np.float16), np.zeros((2, 2), F32)),
            {},
            ValueError,
            "multiple of the instruction's k = 16",
        ),
        (
            (np.zeros((2, 16), np.float16), np.zeros((16, 2), np.float16), np.zeros((2, 3), F32)),
            {},
            ValueError,
            "c has shape",
        ),
        (
            (
                np.zeros((2, 16), np.float16),
                np.zeros((16, 2), np.float16),
                np.zeros((2, 2), np.int32),
            ),
            {},
            TypeError,
            "no tensor-core instruction",
        ),
        (
            (np.zeros((2, 16), np.float16), np.zeros((16, 2), np.float16), np.zeros((2, 2), F32)),
            {"arch": "sm42"},
            ValueError,
            "unknown arch",
        ),
        (
            ([[1.0]], np.zeros((16, 2), np.float16), np.zeros((2, 2), F32)),
            {},
            TypeError,
            "a is a Python list; pass fmt=",
        ),
    ],
)
def test_bad_input_names_the_problem(args, kwargs, exc, words):
    with pytest.raises(exc, match=words.replace("(", r"\(").replace("'", "'")):
        mma(*args, **kwargs)


def test_column_panels_bound_memory_without_changing_bits(monkeypatch):
    import precision.tensorcore.chain as mma_module

    rng = np.random.default_rng(7)
    a = rng.standard_normal((32, 64)).astype(BF16)
    b = rng.standard_normal((64, 200)).astype(BF16)
    c = rng.standard_normal((32, 200)).astype(F32)
    whole = mma(a, b, c)
    monkeypatch.setattr(mma_module, "_MAX_DECODED_B_ELEMENTS", 64 * 24)
    assert np.array_equal(whole.view(np.uint32), mma(a, b, c).view(np.uint32))


@pytest.mark.parametrize("shape", [(1, 256, 4096), (2, 16, 1 << 16)])
def test_decoded_b_costs_ten_bytes_per_element(monkeypatch, shape, traced_peak):
    # b is decoded chunk by chunk into its float64 values and int16 exponents (10 bytes per
    # element), and rows wider than a work item are split into column ranges. Decoding b whole
    # held about 22 bytes per element at once; items of one whole wide row, (2, 16, 65536),
    # held its products (16 x 65536 float64) besides: 22-24 bytes per element of b in all.
    # The work items' own arrays are a fixed amount per thread (test_work_items_stay_near_
    # the_target_size), here held at 2^17 products so that they stay small next to b.
    # (1, 256, 4096) is one whole work item, which decodes b itself along with a, in panels
    # along K (test_a_stack_of_tiles_is_decoded_by_its_work_items): less than the bound.
    import precision.tensorcore.chain as mma_module

    monkeypatch.setattr(mma_module, "_DECODE_CHUNK_ELEMENTS", 1 << 12)
    monkeypatch.setattr(mma_module, "_TARGET_BLOCK_ELEMENTS", 1 << 17)
    m, k, n = shape
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), F32)
    peak = traced_peak(lambda: mma(a, b, c))
    assert peak < 13 * b.size, peak / b.size  # 10 decoded, 1 isfinite, the output


def test_a_stack_of_tiles_is_decoded_by_its_work_items(monkeypatch, traced_peak):
    # a stack of tiles (b not broadcast) was decoded whole: 10 bytes per element of b, 1 GiB
    # beyond the output for 400000 e4m3 tiles of 16 x 32 x 8 (results/bench/
    # memory_audit_2026-11-28). Each work item now decodes its own tiles, so the peak beyond
    # the output stays that of one item whatever the number of tiles (the old code: 9 MB more
    # for 3500 more tiles here).
    import precision.tensorcore.chain as mma_module

    monkeypatch.setattr(mma_module, "_TARGET_BLOCK_ELEMENTS", 1 << 14)
    rng = np.random.default_rng(5)
    extra = []
    for tiles in (500, 4000):
        a = rng.standard_normal((tiles, 2, 32)).astype(ml_dtypes.float8_e4m3fn)
        b = rng.standard_normal((tiles, 32, 8)).astype(ml_dtypes.float8_e4m3fn)
        c = np.zeros((tiles, 2, 8), F32)
        extra.append(traced_peak(lambda a=a, b=b, c=c: mma(a, b, c)) - c.nbytes)
    assert extra[1] < extra[0] + (1 << 19), extra


def test_b_decoded_by_the_items_or_for_all_gives_the_same_bits(monkeypatch):
    # b decoded by each work item or once for all items gives the same bits, specials and
    # satf included: the same exact arithmetic on the same independent tiles. A stack of
    # tiles (b not broadcast) is decoded by its items, in one item or four; with items of row
    # blocks, for all items, or (b over _MAX_DECODED_B_ELEMENTS) by every item that reads it.
    # A broadcast b is decoded for all items, or by its items where b is over the maximum.
    import precision.tensorcore.chain as mma_module

    rng = np.random.default_rng(13)
    for dtype, kw in ((np.float16, {}), (ml_dtypes.float8_e4m3fn, {}), (F32, {"fmt": "tf32"})):
        for a_batch, b_batch in (((4,), (4,)), ((2, 1), (1, 3))):
            a = (rng.standard_normal(a_batch + (3, 64)) * 4).astype(dtype)
            b = (rng.standard_normal(b_batch + (64, 16)) * 4).astype(dtype)
            if dtype != ml_dtypes.float8_e4m3fn:
                a.reshape(-1)[70], b.reshape(-1)[500], b.reshape(-1)[900] = np.inf, np.nan, -np.inf
            c = rng.standard_normal((3, 16)).astype(F32)
            c[1, 3] = 3e38  # satf clamps (overflows) in the middle of the chain
            for satf in (False, True):
                got = []
                for target, most in ((1 << 19, 1 << 26), (200, 1 << 26), (200, 64), (1000, 64)):
                    with monkeypatch.context() as mp:
                        mp.setattr(mma_module, "_TARGET_BLOCK_ELEMENTS", target)
                        mp.setattr(mma_module, "_MAX_DECODED_B_ELEMENTS", most)
                        got.append(mma(a, b, c, satf=satf, **kw).view(np.uint32))
                for other in got[1:]:
                    assert np.array_equal(got[0], other)


def test_work_items_stay_near_the_target_size():
    # wide rows are split into column ranges: every item's block product array (rows x cols x
    # block) stays within the target, and the items cover the output exactly once
    from precision.tensorcore.chain import _TARGET_BLOCK_ELEMENTS, _work_items

    for r, m, n, block in [(1, 1, 1 << 20, 16), (2, 3, 100_000, 32), (3, 40, 33, 16), (5, 2, 9, 8)]:
        items = _work_items(r, m, n, block)
        seen = np.zeros((r, m, n), np.int64)
        for item in items:
            rs, ms, ns = item
            seen[rs, ms, ns] += 1
            size = (rs.stop - rs.start) * (ms.stop - ms.start) * (ns.stop - ns.start) * block
            assert size <= max(_TARGET_BLOCK_ELEMENTS, block)
        assert (seen == 1).all()


def test_column_items_do_not_change_bits(monkeypatch):
    # tiny work items and decode chunks (every row split into many column ranges, b decoded a
    # few elements at a time, a in panels of one instruction along K) give the same bits,
    # specials and satf included
    import precision.tensorcore.chain as mma_module

    rng = np.random.default_rng(11)
    for dtype, kw in ((np.float16, {}), (ml_dtypes.float8_e4m3fn, {}), (F32, {"fmt": "tf32"})):
        a = (rng.standard_normal((3, 2, 64)) * 4).astype(dtype)
        b = (rng.standard_normal((1, 64, 50)) * 4).astype(dtype)
        if dtype != ml_dtypes.float8_e4m3fn:
            a[0, 0, 3], b[0, 5, 7], b[0, 9, 8] = np.inf, np.nan, -np.inf
        c = rng.standard_normal((2, 50)).astype(F32)
        c[1, 3] = 3e38  # satf clamps (overflows) in the middle of the chain
        for satf in (False, True):
            whole = mma(a, b, c, satf=satf, **kw)
            with monkeypatch.context() as mp:
                mp.setattr(mma_module, "_TARGET_BLOCK_ELEMENTS", 40)
                mp.setattr(mma_module, "_DECODE_CHUNK_ELEMENTS", 7)
                small = mma(a, b, c, satf=satf, **kw)
            assert np.array_equal(whole.view(np.uint32), small.view(np.uint32))


def test_threads_follow_omp_num_threads_and_change_no_bits(monkeypatch):
    """The work items run on as many threads as precision.threads.thread_count gives: the
    runner's Dask workers set OMP_NUM_THREADS to their share of the cores, and one thread
    means no pool at all. Three threads over many small items give the serial bits."""
    import precision.tensorcore.chain as chain_module
    from precision.threads import in_threads

    rng = np.random.default_rng(12)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 96)).astype(np.float16)
    c = rng.standard_normal((64, 96)).astype(F32)
    a[3, 5], b[7, 9] = np.inf, np.nan
    monkeypatch.setattr(chain_module, "_MIN_THREADED_MACS", 0)
    monkeypatch.setattr(chain_module, "_TARGET_BLOCK_ELEMENTS", 2048)
    pools: list[tuple[int, int]] = []

    def counted(work, parts, threads=0):
        pools.append((len(parts), threads))
        return in_threads(work, parts, threads)

    monkeypatch.setattr(chain_module, "in_threads", counted)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    serial = mma(a, b, c)
    assert pools == []
    monkeypatch.setattr(chain_module, "thread_count", lambda: 3)
    threaded = mma(a, b, c)
    assert pools and all(items > 3 and threads == 3 for items, threads in pools)
    assert np.array_equal(serial.view(np.uint32), threaded.view(np.uint32))
