"""mma API: format aliases, op=, mixed fp8 decoding, and the edges of issue 16 section 7.

Expected values are exact arithmetic worked out by hand from the model's definition (block
anchor, truncation grid 2**(E - F), output rounding), never earlier emulator output.
"""

from __future__ import annotations

import tracemalloc

import ml_dtypes
import numpy as np
import pytest

from precision.formats import ALIASES, get_format
from precision.tensorcore import get_arch, mma

F32 = np.float32
BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn
E5M2 = ml_dtypes.float8_e5m2


def _rand(rng, shape, dtype, lo=-6, hi=6):
    v = np.exp2(rng.integers(lo, hi, size=shape)) * rng.uniform(1, 2, size=shape)
    return (v * rng.choice([-1.0, 1.0], size=shape)).astype(dtype)


# ----------------------------------------------------------------------------- formats, op


@pytest.mark.parametrize(
    ("dtype", "canonical"),
    [(np.float16, "fp16"), (BF16, "bf16"), (E4M3, "e4m3"), (E5M2, "e5m2"), (F32, "tf32")],
)
def test_every_alias_of_the_input_format_is_accepted(dtype, canonical):
    rng = np.random.default_rng(7)
    a, b = _rand(rng, (4, 32), dtype), _rand(rng, (32, 3), dtype)
    c = _rand(rng, (4, 3), F32)
    want = mma(a, b, c, fmt="tf32" if canonical == "tf32" else None).view(np.uint32)
    names = [canonical, canonical.upper(), get_format(canonical)]
    names += [alias for alias, name in ALIASES.items() if name == canonical]
    for fmt in names:
        got = mma(a, b, c, fmt=fmt).view(np.uint32)
        assert (got == want).all(), fmt


def test_fmt_f16_with_float16_inputs_works_and_a_real_contradiction_is_refused():
    a = np.ones((2, 16), np.float16)
    b = np.ones((16, 2), np.float16)
    c = np.zeros((2, 2), F32)
    assert (mma(a, b, c, fmt="f16") == 16).all()
    with pytest.raises(TypeError, match=r"fmt='bf16' contradicts a.dtype float16 \(fp16\)"):
        mma(a, b, c, fmt="bf16")


def test_op_selects_the_instruction_family():
    sm90 = get_arch("sm90")
    assert sm90.instruction("f16", "f32").family == "mma"
    wg = sm90.instruction("e4m3", "fp32", op="wgmma")
    assert (wg.family, wg.shape, wg.block, wg.frac_bits, wg.out_rounding) == (
        "wgmma",
        (64, 8, 32),
        32,
        13,
        "rz_e8m13",
    )
    assert wg.ptx == "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3"
    assert "tests/data/sm90_wgmma" in wg.evidence
    with pytest.raises(ValueError, match="op='bogus'"):
        sm90.instruction("f16", "f32", op="bogus")
    with pytest.raises(TypeError, match=r"no tensor-core instruction \(op='wgmma'\)"):
        mma(  # no bf16 -> f16 instruction exists (wgmma f16 -> f16 does, since issue 15)
            np.zeros((2, 16), ml_dtypes.bfloat16),
            np.zeros((16, 2), ml_dtypes.bfloat16),
            np.zeros((2, 2), np.float16),
            op="wgmma",
        )


def test_fp8_wgmma_fuses_all_32_products_where_mma_sync_splits_them():
    # a·b = 1 + 30 * 2^-20 + 2^-20: one 32-product block (F = 13, E = 0, grid 2^-13) drops every
    # tiny product; the f16 lowering of mma.sync (F = 25) keeps them, then fp32 RZ.
    a = np.zeros((1, 32), E4M3)
    b = np.zeros((32, 1), E5M2)
    a[0, :] = 2.0**-4
    b[0, 0] = 16.0
    b[1:, 0] = 2.0**-16
    c = np.zeros((1, 1), F32)
    assert mma(a, b, c, op="wgmma")[0, 0] == 1.0
    assert mma(a, b, c, op="mma")[0, 0] == np.float32(1 + 31 * 2.0**-20)


# ----------------------------------------------------------------------------- mixed fp8


def test_mixed_fp8_decodes_a_subnormal_e5m2_b_in_its_own_format():
    # sm90 mma.sync, a e4m3, b e5m2, both products in one 16-product block (k = 0, 1):
    # 256 * 2^-16 = 2^-8 has anchor 8 + emin(e5m2) = 8 - 14 = -6, so E = -6 and the grid is
    # 2^(-6-25) = 2^-31; 2^-9 * 2^-16 = 2^-25 is kept: d = 2^-8 + 2^-25 exactly.
    # (Decoding b as e4m3 would anchor 2^-16 at -6, give E = 2 and drop 2^-25.)
    a = np.zeros((1, 32), E4M3)
    b = np.zeros((32, 1), E5M2)
    a[0, 0], b[0, 0] = 256.0, 2.0**-16
    a[0, 1], b[1, 0] = 2.0**-9, 2.0**-16
    d = mma(a, b, np.zeros((1, 1), F32), arch="sm90")
    assert d[0, 0] == np.float32(2.0**-8 + 2.0**-25)


@pytest.mark.parametrize(("arch", "op"), [("sm89", "mma"), ("sm90", "wgmma")])
def test_mixed_fp8_decodes_a_subnormal_e4m3_b_in_its_own_format(arch, op):
    # a e5m2, b e4m3, F = 13. 1 * (7 * 2^-9) has anchor 0 + emin(e4m3) = -6 (b is subnormal),
    # so E = -6 and the grid is 2^-19; 2^-16 * 2^-4 = 2^-20 is truncated: d = 7 * 2^-9 exactly.
    # (Decoding b as e5m2 would anchor it at -7, grid 2^-20, and keep the 2^-20.)
    a = np.zeros((1, 32), E5M2)
    b = np.zeros((32, 1), E4M3)
    a[0, 0], b[0, 0] = 1.0, 7 * 2.0**-9
    a[0, 1], b[1, 0] = 2.0**-16, 2.0**-4
    d = mma(a, b, np.zeros((1, 1), F32), arch=arch, op=op)
    assert d[0, 0] == np.float32(7 * 2.0**-9)


@pytest.mark.parametrize("op", ["mma", "wgmma"])
def test_mixed_fp8_is_symmetric_under_transposition(op):
    # d = a·b + c and d^T = b^T·a^T + c^T hold the same products with the same anchors, so the
    # model must give identical bits; decoding both operands in a's format breaks this.
    rng = np.random.default_rng(3)
    a = _rand(rng, (8, 64), E4M3, lo=-12, hi=4)
    b = _rand(rng, (64, 6), E5M2, lo=-18, hi=4)
    c = _rand(rng, (8, 6), F32, lo=-20, hi=0)
    d = mma(a, b, c, op=op)
    dt = mma(np.ascontiguousarray(b.T), np.ascontiguousarray(a.T), np.ascontiguousarray(c.T), op=op)
    assert (d.view(np.uint32) == dt.T.view(np.uint32)).all()


# ----------------------------------------------------------------------------- API edges


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "c_shape", "out_shape"),
    [
        ((0, 16), (16, 3), (0, 3), (0, 3)),
        ((4, 16), (16, 0), (4, 0), (4, 0)),
        ((0, 16), (16, 0), (0, 0), (0, 0)),
        ((0, 2, 16), (16, 3), (2, 3), (0, 2, 3)),
        ((0, 0), (0, 8), (0, 8), (0, 8)),  # K = 0 too (it raised "K = 0 is not a positive ...")
        ((4, 0), (0, 0), (4, 0), (4, 0)),
    ],
)
@pytest.mark.parametrize("acc", [F32, np.float16])
def test_empty_m_n_or_batch_gives_an_empty_result(a_shape, b_shape, c_shape, out_shape, acc):
    d = mma(np.zeros(a_shape, np.float16), np.zeros(b_shape, np.float16), np.zeros(c_shape, acc))
    assert d.shape == out_shape and d.dtype == acc


def test_an_empty_result_on_the_gpu_engine_needs_a_gpu_and_keeps_cs_kind():
    """device="gpu" with an empty result asks for a GPU as a non-empty call does (it imported
    CuPy unguarded), and, as mma_gpu, returns numpy for a numpy c."""
    from precision.gpu import gpu_available

    a, b, c = np.zeros((0, 16), np.float16), np.zeros((16, 8), np.float16), np.zeros((0, 8), F32)
    if not gpu_available():
        with pytest.raises(RuntimeError, match="needs"):
            mma(a, b, c, device="gpu")
        return
    d = mma(a, b, c, device="gpu")
    assert isinstance(d, np.ndarray) and d.shape == (0, 8) and d.dtype == F32


def test_k_zero_with_a_result_is_still_refused():
    with pytest.raises(ValueError, match="K = 0 is not a positive multiple"):
        mma(np.zeros((4, 0), np.float16), np.zeros((0, 8), np.float16), np.zeros((4, 8), F32))


@pytest.mark.parametrize("arg", ["fmt", "b_fmt", "d_fmt"])
def test_an_unknown_format_names_its_argument(arg):
    a, b, c = np.zeros((16, 16), np.float16), np.zeros((16, 8), np.float16), np.zeros((16, 8), F32)
    with pytest.raises(ValueError, match=rf"^{arg}='fp17': unknown format 'fp17'; did you mean"):
        mma(a, b, c, **{arg: "fp17"})


def test_empty_int8_result():
    d = mma(np.zeros((0, 32), np.int8), np.zeros((32, 5), np.int8), np.zeros((0, 5), np.int32))
    assert d.shape == (0, 5) and d.dtype == np.int32


def test_big_endian_arrays_are_accepted():
    rng = np.random.default_rng(11)
    a, b = _rand(rng, (5, 16), np.float16), _rand(rng, (16, 4), np.float16)
    c = _rand(rng, (5, 4), F32)
    want = mma(a, b, c).view(np.uint32)
    got = mma(a.astype(">f2"), b.astype(">f2"), c.astype(">f4"))
    assert got.dtype.isnative and (got.view(np.uint32) == want).all()
    a32, b32 = a.astype(F32), b.astype(F32)  # tf32 in big-endian fp32 containers
    want = mma(a32[:, :8], b32[:8], c, fmt="tf32").view(np.uint32)
    got = mma(a32[:, :8].astype(">f4"), b32[:8].astype(">f4"), c.astype(">f4"), fmt="tf32")
    assert (got.view(np.uint32) == want).all()


def test_python_lists_are_accepted_with_fmt():
    a = [[1.0, 2.0] + [0.0] * 14]
    b = [[3.0]] + [[0.5]] + [[0.0]] * 14
    d = mma(a, b, [[0.25]], fmt="f16")
    assert d.dtype == F32 and d[0, 0] == 1 * 3 + 2 * 0.5 + 0.25
    d = mma([[1] * 32], [[2]] * 32, [[5]], fmt="s8")
    assert d.dtype == np.int32 and d[0, 0] == 69
    with pytest.raises(TypeError, match="pass fmt="):
        mma(a, b, [[0.25]])


def test_python_lists_are_rounded_once_into_the_format_by_its_own_rules():
    """A numpy cast used to wrap int8 (300 -> 44), round bf16 twice (through float32) and turn
    e4m3 overflow into NaN. Floats are now rounded once by the format's rules (the values
    below are derived by hand); integers out of range are refused, as in arrays."""
    zeros = np.zeros((16, 8), F32)
    # integer formats take integers in range only, exactly as arrays do: nothing saturates
    assert mma([[-128] * 32] * 16, [[1] * 8] * 32, [[0] * 8] * 16, fmt="int8")[0, 0] == -128 * 32
    for fmt, bad in (("int8", 300), ("int8", 1.5), ("int4", 100), ("uint1", 2)):
        k = 256 if fmt == "uint1" else 32
        with pytest.raises(ValueError, match=f"a: list values must be integers in {fmt}'s"):
            mma([[bad] * k] * 16, [[1] * 8] * k, [[0] * 8] * 16, fmt=fmt)
    # bf16 (8 significant bits): 1 + 2^-8 + 2^-30 lies above the midpoint of 1 and 1 + 2^-7
    x = 1 + 2**-8 + 2**-30
    assert mma([[x] + [0.0] * 15] * 16, [[1.0] * 8] * 16, zeros, fmt="bf16")[0, 0] == 1 + 2**-7
    # e4m3 has no Inf: 1000 saturates to its largest finite value 448
    assert mma([[1000.0] + [0.0] * 31] * 16, [[1.0] * 8] * 32, zeros, fmt="e4m3")[0, 0] == 448
    # a list b is rounded into b_fmt, not fmt: 0.29 is 0.3125 in e5m2 (steps of 1/16 in
    # [1/4, 1/2)) but 0.28125 in e4m3 (steps of 1/32)
    b = [[0.29] * 8] + [[0.0] * 8] * 31
    a = np.zeros((16, 32), ml_dtypes.float8_e4m3fn)
    a[:, 0] = 1
    assert mma(a, b, zeros, fmt="e4m3", b_fmt="e5m2")[0, 0] == 0.3125


def test_uint1_reads_bit_0_only_and_satf_is_checked():
    """b1 elements are uint8 containers of which only bit 0 counts (documented in mma): 2 is a
    0 bit and 3 a 1 bit, so and.popc over k = 256 gives 0 and 256."""
    ones, c = np.ones((256, 8), np.uint8), np.zeros((16, 8), np.int32)
    for a, want in ((2, 0), (3, 256)):
        got = mma(np.full((16, 256), a, np.uint8), ones, c, fmt="uint1", bitop="and.popc")
        assert (got == want).all(), a
    with pytest.raises(TypeError, match="satf must be True or False, got 'yes'"):
        mma(np.zeros((16, 16), np.float16), np.zeros((16, 8), np.float16), np.zeros((16, 8), F32),
            satf="yes")  # fmt: skip


@pytest.mark.parametrize("which", ["a", "c"])
def test_complex_input_is_refused(which):
    ops = {
        "a": np.zeros((2, 16), np.float16),
        "b": np.zeros((16, 2), np.float16),
        "c": np.zeros((2, 2), F32),
    }
    ops[which] = ops[which].astype(np.complex64)
    with pytest.raises(TypeError, match=f"{which} has complex dtype"):
        mma(ops["a"], ops["b"], ops["c"])
    with pytest.raises(TypeError, match="complex"):
        mma([[1j] * 16], np.zeros((16, 2), np.float16), np.zeros((1, 2), F32), fmt="f16")


@pytest.mark.parametrize(
    ("a_batch", "b_batch", "c_batch"),
    [((3,), (1,), ()), ((1,), (3,), (3,)), ((2, 1), (1, 3), (1,)), ((), (2, 3), (2, 1))],
)
def test_broadcast_batch_equals_the_loop_over_entries(a_batch, b_batch, c_batch):
    rng = np.random.default_rng(5)
    m, k, n = 3, 32, 4
    a = _rand(rng, a_batch + (m, k), BF16)
    b = _rand(rng, b_batch + (k, n), BF16)
    c = _rand(rng, c_batch + (m, n), F32)
    d = mma(a, b, c)
    batch = np.broadcast_shapes(a_batch, b_batch, c_batch)
    assert d.shape == batch + (m, n)
    ab, bb = np.broadcast_to(a, batch + (m, k)), np.broadcast_to(b, batch + (k, n))
    cb = np.broadcast_to(c, batch + (m, n))
    for idx in np.ndindex(*batch):
        want = mma(np.array(ab[idx]), np.array(bb[idx]), np.array(cb[idx]))
        assert (d[idx].view(np.uint32) == want.view(np.uint32)).all(), idx


def test_broadcast_batch_is_not_materialised():
    # b [1, K, N] shared by 64 batch entries: decoding it once costs K*N*10 bytes (1.3 MB);
    # materialising the broadcast would decode 64 copies (84 MB).
    rng = np.random.default_rng(9)
    a = _rand(rng, (64, 2, 256), np.float16)
    b = _rand(rng, (1, 256, 512), np.float16)
    c = np.zeros((1, 2, 512), F32)
    tracemalloc.start()
    try:
        d = mma(a, b, c)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert d.shape == (64, 2, 512)
    assert peak < 24e6, f"peak {peak / 1e6:.1f} MB"


@pytest.mark.parametrize(
    ("dtype", "kwargs"),
    [
        (np.int8, {}),
        (np.int8, {"satf": True}),
        (np.uint8, {"fmt": "uint1"}),
        (np.float64, {}),
    ],
)
def test_integer_and_f64_broadcast_batch_is_not_materialised(dtype, kwargs):
    # b [1, K, N] shared by 64 batch entries: the integer cores widen it once (float64, 1 MB)
    # and np.matmul broadcasts it; the f64 FMA chain reads the one entry from every tile.
    # Materialised per batch entry, it took 72-135 MB (integer: int64 and float64 copies)
    # and 287 MB (f64: copies, Veltkamp splits and flags).
    rng = np.random.default_rng(9)
    if dtype == np.float64:
        a, b = rng.standard_normal((64, 2, 256)), rng.standard_normal((1, 256, 512))
        c = np.zeros((1, 2, 512))
    else:
        lo, hi = (0, 2) if kwargs.get("fmt") == "uint1" else (-128, 128)
        a = rng.integers(lo, hi, (64, 2, 256)).astype(dtype)
        b = rng.integers(lo, hi, (1, 256, 512)).astype(dtype)
        c = np.full((1, 2, 512), 2**31 - 2**20, np.int32)  # satf: clamps on some rows
    tracemalloc.start()
    try:
        d = mma(a, b, c, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert d.shape == (64, 2, 512)
    assert peak < 16e6, f"peak {peak / 1e6:.1f} MB"
    for i in (0, 37):  # the same as each entry alone
        want = mma(a[i], b[0], c[0], **kwargs)
        assert np.array_equal(d[i].view(np.uint8), want.view(np.uint8))


def test_subnormal_fp32_c_anchors_at_minus_126():
    # bf16, sm90: 16 products of 2^-76 * 2^-76 = 2^-152 and c = 2^-130 (fp32 subnormal).
    # c anchors at -126 (not at -130), so E = -126 and the grid is 2^(-126-25) = 2^-151: every
    # product truncates to 0 and d = 2^-130. (An anchor of -130 would keep them: 2^-130 + 2^-148.)
    a = np.full((1, 16), 2.0**-76, BF16)
    b = np.full((16, 1), 2.0**-76, BF16)
    c = np.full((1, 1), 2.0**-130, F32)
    assert mma(a, b, c)[0, 0] == np.float32(2.0**-130)


# ----------------------------------------------------------------- arch and op names


@pytest.mark.parametrize(
    ("arch", "says"),
    [
        ("sm86", "that GPU generation has no model of its own; 'sm80' models it, so write 'sm80'"),
        ("sm_87", "'sm80' models it, so write 'sm80'"),
        ("sm120", "'sm100' models it, so write 'sm100'"),
        ("sm61", "GPUs before sm_70 (Volta) have no tensor cores to emulate"),
        ("sm91", "; did you mean 'sm90'?"),
        # product names were told 'sm100' ("H100") or 'sm100' ("A100", "V100") by spelling
        ("H100", "that GPU has compute capability 9.0, which 'sm90' models, so write 'sm90'"),
        ("A100", "compute capability 8.0, which 'sm80' models, so write 'sm80'"),
        ("V100", "compute capability 7.0, which 'sm70' models, so write 'sm70'"),
        ("NVIDIA A10", "compute capability 8.6, which 'sm80' models, so write 'sm80'"),
    ],
)
def test_every_entry_point_says_the_same_about_an_unknown_arch(tmp_path, arch, says):
    """gemm(arch="sm86") suggested 'sm89' (another GPU's model), get_arch gave no suggestion at
    all, and only the runner's config said that sm80 models sm_86. One sentence now
    (tensorcore.arch.unknown_arch_message, table MODELLED_BY), raised by all of them."""
    from precision.gemm import gemm
    from precision.runner.config import ConfigError, parse_config

    messages = []
    a = np.ones((2, 16), np.float16)
    calls = [
        lambda: get_arch(arch),
        lambda: mma(a, a.T.copy(), np.zeros((2, 2), F32), arch=arch),
        lambda: gemm(np.ones((2, 2)), np.ones((2, 2)), arch=arch),
        lambda: gemm(np.ones((2, 2)), np.ones((2, 2)), method="ozaki2", arch=arch),
    ]
    for call in calls:
        with pytest.raises(ValueError) as exc:
            call()
        messages.append(str(exc.value))
    assert len(set(messages)) == 1, messages
    assert messages[0].startswith(f"unknown arch {arch!r}") and says in messages[0]
    if "models it" in says:
        assert "did you mean" not in messages[0]
    config = (
        'name = "x"\nseed = 0\nrepeats = 1\nreference = "exact"\n[sweep]\nsize = [64]\n'
        f'distribution = ["uniform"]\nmethod = ["plain"]\nformat = ["f16"]\narch = ["{arch}"]\n'
    )
    with pytest.raises(ConfigError) as exc:
        parse_config(config, "cfg.toml")
    assert str(exc.value).endswith(f"[sweep] arch: {messages[0]}")


def test_the_probes_map_compute_capabilities_with_the_same_table():
    from precision.tensorcore.arch import MODELLED_BY
    from precision.tensorcore.arch import arch_of_compute_capability as arch_of

    for cc, model in MODELLED_BY.items():
        assert arch_of(cc) == model
        with pytest.raises(ValueError, match=f"{model!r} models it"):
            get_arch(f"sm{cc}")


def test_a_misspelt_op_gets_the_nearest_family():
    a = np.ones((2, 16), np.float16)
    with pytest.raises(ValueError, match=r"op='wgma': unknown; did you mean 'wgmma'\?"):
        mma(a, a.T.copy(), np.zeros((2, 2), F32), op="wgma")
    with pytest.raises(ValueError, match=r"op='bogus': unknown \(expected one of mma, wgmma"):
        get_arch("sm90").instruction("f16", "f32", op="bogus")


# -------------------------------------------------------------------- array subclasses


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_np_matrix_operands_behave_like_arrays():
    """np.matrix kept its class through the checks and failed with "not enough values to
    unpack" (a matrix's indexing keeps two axes); ndarray subclasses are now read as the
    plain array of their values, as gemm reads them."""
    rng = np.random.default_rng(3)
    a, b = _rand(rng, (4, 32), np.float16), _rand(rng, (32, 3), np.float16)
    c = _rand(rng, (4, 3), F32)
    want = mma(a, b, c)
    for args in ((np.asmatrix(a), b, c), (a, np.asmatrix(b), c), (a, b, np.asmatrix(c))):
        got = mma(*args)
        assert type(got) is np.ndarray and got.shape == (4, 3)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    got = mma(np.asmatrix(a), np.asmatrix(b), np.asmatrix(c), arch="sm80")
    assert np.array_equal(got.view(np.uint32), mma(a, b, c, arch="sm80").view(np.uint32))


def test_a_wgmma_ptx_shape_of_any_n_names_the_modelled_instruction():
    """wgmma is modelled as m64n8kK; m64n256k16, the shape our GEMM kernels issue, was refused.
    Any n of 8..256 in steps of 8 now names it, with the same bits; other n are refused."""
    rng = np.random.default_rng(5)
    a, b = _rand(rng, (64, 32), np.float16), _rand(rng, (32, 256), np.float16)
    c = np.zeros((64, 256), F32)
    want = mma(a, b, c, op="wgmma")
    for n in (8, 136, 256):
        got = mma(a, b, c, op="wgmma", shape=(64, n, 16))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    for bad in ((64, 260, 16), (64, 264, 16), (64, 256, 32)):
        with pytest.raises(TypeError, match="any n of 8 to 256 in steps of 8"):
            mma(a, b, c, op="wgmma", shape=bad)
