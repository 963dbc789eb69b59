"""Plumbing of precision.probe.model_compare with fake second models (no MMA-Sim needed).

The real comparison against MMA-Sim is a documented command (docs/coverage.md, "Model
comparison"), not a CI test: it needs torch and mmasim, which are not dependencies.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
import types

import numpy as np
import pytest

from precision.formats import get_format
from precision.probe import model_compare as mc
from precision.tensorcore.arch import get_arch

N = 2000


def _instr(arch: str, a: str, acc: str, **kw):
    return get_arch(arch).instruction(a, acc, **kw)


def test_inputs_cover_exponents_subnormals_and_specials():
    ins = _instr("sm80", "fp16", "fp32")
    a, b, c, reg = mc.draw_inputs(ins, N, np.random.default_rng(1))
    assert a.shape == b.shape == (N, ins.k) and c.shape == (N,) and a.dtype == np.uint16
    assert set(np.unique(reg)) == set(range(len(mc.REGIMES)))
    fields = np.unique((a >> 10) & 0x1F)
    assert fields.tolist() == list(range(32))  # every exponent field, 0 (subnormal) and 31
    x = a.view(np.float16).astype(np.float64)
    assert np.isnan(x).any() and np.isinf(x).any() and (x == 0).any()
    assert ((x != 0) & (np.abs(x) < 2.0**-14)).any()  # subnormals
    # cancellation rows: odd terms are the negatives of even ones (or one bit off)
    r = np.flatnonzero(reg == mc.REGIMES.index("cancel"))[0]
    assert np.all((a[r, 1::2] ^ a[r, 0::2]) & 0x8000) and np.all(b[r, 1::2] == b[r, 0::2])


def test_tf32_inputs_set_the_ignored_low_bits():
    ins = _instr("sm80", "tf32", "fp32")
    a, _, _, _ = mc.draw_inputs(ins, N, np.random.default_rng(2))
    assert a.dtype == np.uint32 and (a & 0x1FFF).any()


def test_mixed_fp8_inputs_use_each_operands_format():
    ins = _instr("sm89", "e4m3", "fp32", b_fmt="e5m2")
    a, b, _, _ = mc.draw_inputs(ins, N, np.random.default_rng(3))
    xa = a.view(get_format("e4m3").storage).astype(np.float64)
    xb = b.view(get_format("e5m2").storage).astype(np.float64)
    assert np.isinf(xb).any() and not np.isinf(xa).any()  # e4m3 has no Inf
    fin_b = np.abs(xb[np.isfinite(xb)])
    assert np.nanmax(np.abs(xa)) == 448 and fin_b.max() == 57344


def test_mmasim_strings():
    assert mc.mmasim_string(_instr("sm70", "fp16", "fp32")) == "m8n8k4.f32.f16.f16.f32"
    ins = _instr("sm70", "fp16", "fp32", op="mma", c_fmt="fp16")
    assert mc.mmasim_string(ins) == "m8n8k4.f32.f16.f16.f16"
    assert mc.mmasim_string(_instr("sm89", "e5m2", "fp16", b_fmt="e4m3")) == (
        "m16n8k32.f16.e5m2.e4m3.f16"
    )
    assert mc.mmasim_string(_instr("sm80", "tf32", "fp32")) == "m16n8k8.f32.tf32.tf32.f32"
    comparable = [i for i in get_arch("sm80").all_instructions() if mc.comparable(i)]
    assert {i.a_fmt for i in comparable} == {"fp16", "bf16", "tf32", "fp64"}


def _flip_model(rows: np.ndarray):
    """A fake second model: precision's own d with the lowest bit flipped in ``rows`` and every
    NaN written with another payload, to exercise match counting and classification."""

    def other(instr, a, b, c):
        d = mc.run_precision(instr, "sm80", a, b, c).copy()
        fd = get_format(instr.acc_fmt)
        one = np.dtype(fd.bit_layout.uint).type(1)
        d[rows] ^= one
        nan = np.isnan(d.view(fd.storage).astype(np.float64))
        d[nan] = np.dtype(fd.bit_layout.uint).type(fd.gpu_canonical_nan_bits) ^ one
        return d

    return other


def test_compare_counts_and_classifies_with_a_fake_model():
    ins = _instr("sm80", "fp16", "fp16")
    rng = np.random.default_rng([7, 0])
    a, b, c, _ = mc.draw_inputs(ins, N, rng)
    d = mc.run_precision(ins, "sm80", a, b, c)
    x = d.view(np.float16).astype(np.float64)
    finite = np.flatnonzero(np.isfinite(x) & (x != 0) & (np.abs(x) > 2.0**-10))
    nan_rows = np.flatnonzero(np.isnan(x))
    flip = finite[:37]
    (res,) = mc.compare("sm80", _flip_model(flip), n=N, seed=7, instructions=[ins])
    assert res.n == N
    assert res.classes["nan_payload"] == nan_rows.size > 0
    flipped = sum(v for k, v in res.classes.items() if k != "nan_payload")
    assert flipped == 37
    assert res.matches == N - nan_rows.size - 37
    table = mc.format_table("sm80", [res])
    assert "m16n8k16.f16.f16.f16.f16" in table and f"{res.matches:,} / {N:,}" in table


def test_classify_signed_zero_and_overflow():
    ins = _instr("sm80", "fp16", "fp32")
    a = np.zeros((3, ins.k), np.uint16)
    b = np.zeros((3, ins.k), np.uint16)
    c = np.zeros(3, np.uint32)
    ours = np.array([0x00000000, 0x7F7FFFFF, 0x3F800000], np.uint32)
    theirs = np.array([0x80000000, 0x7F800000, 0x3F800000], np.uint32)
    cls = mc.classify(ins, a, b, c, ours, theirs)
    assert [mc.CLASSES[k] if k >= 0 else None for k in cls] == [
        "signed_zero",
        "inf_vs_finite",
        None,
    ]


@pytest.mark.skipif(importlib.util.find_spec("mmasim") is not None, reason="mmasim installed here")
def test_missing_mmasim_names_the_install():
    with pytest.raises(ImportError, match="mmasim"):
        mc.mmasim_model("sm80")


# Runs ``python -m precision.probe.model_compare ARGS`` with MMA-Sim and PyTorch unimportable
# (a None in sys.modules makes the import fail), whether or not they are installed here.
WITHOUT_MMASIM = """\
import runpy, sys
sys.modules["torch"] = sys.modules["mmasim"] = None
runpy.run_module("precision.probe.model_compare", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("extra", [[], ["--sensitivity"]])
def test_cli_without_mmasim_prints_one_error_line_and_exits_2(extra):
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_MMASIM, "sm80", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr  # no traceback
    line = lines[0]
    assert line.startswith("error: model_compare needs ")
    for what in ("MMA-Sim (`mmasim`)", "PyTorch (`torch`)", "pip install mmasim torch"):
        assert what in line


def test_missing_torch_alone_is_named(monkeypatch, capsys):
    """With MMA-Sim importable but PyTorch not, the message names PyTorch only."""
    fake = types.ModuleType("mmasim")
    fake.__spec__ = importlib.machinery.ModuleSpec("mmasim", None)
    monkeypatch.setitem(sys.modules, "mmasim", fake)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(mc.MissingDependencyError) as info:
        mc.mmasim_model("sm80")
    assert "needs PyTorch (`torch`)," in str(info.value)
    assert "MMA-Sim (`mmasim`)" not in str(info.value)
    assert mc.main(["sm80"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: model_compare needs PyTorch")


def test_instruction_the_other_model_lacks_is_noted():
    ins = _instr("sm80", "bf16", "fp32")

    def other(instr, a, b, c):
        raise NotImplementedError("fake model has no bf16")

    (res,) = mc.compare("sm80", other, n=10, instructions=[ins])
    assert res.n == 0 and res.note == "fake model has no bf16"
    assert "fake model has no bf16" in mc.format_table("sm80", [res])
    sm90 = [i for i in get_arch("sm90").all_instructions() if mc.comparable(i, "sm90")]
    assert sm90 and all(i.family == "mma" for i in sm90)


def test_replay_reads_a_recording_folder(tmp_path):
    """replay() on a slice of the H200 bf16 recording: a second model equal to the sm90 model
    (100 % on that recording in CI) matches every output; one with flipped bits does not."""
    import json
    from pathlib import Path

    src = Path(__file__).parents[1] / "data" / "sm90"
    z = np.load(src / "bf16_f32.npz")
    np.savez(tmp_path / "bf16_f32.npz", **{k: z[k][:12] for k in ("a", "b", "c", "d")})
    ptx = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    manifest = {"instructions": {"bf16_f32": {"file": "bf16_f32.npz", "ptx": ptx}}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))

    def same(instr, a, b, c):
        return mc.run_precision(instr, "sm90", a, b, c)

    (res,) = mc.replay("sm90", same, [str(tmp_path)])
    assert res.n == 12 * 16 * 8 and res.matches == res.n and "bf16_f32" in res.source

    def flipped(instr, a, b, c):
        return same(instr, a, b, c) ^ np.uint32(1 << 31)

    (res,) = mc.replay("sm90", flipped, [str(tmp_path)])
    assert res.matches < res.n and sum(res.classes.values()) == res.n - res.matches


@pytest.mark.parametrize(
    "arch,a,acc",
    [("sm80", "fp64", "fp64"), ("sm80", "tf32", "fp32"), ("sm89", "e5m2", "fp16")],
)
def test_exp_floor_rows_hold_two_products_and_zero_c(arch, a, acc):
    ins = _instr(arch, a, acc)
    x, y, c, reg = mc.draw_inputs(ins, 400, np.random.default_rng(5))
    rows = reg == mc.REGIMES.index("exp_floor")
    fa, fb, fc = (get_format(f) for f in (ins.a_fmt, ins.b_fmt, ins.c_format))
    va = x[rows].view(fa.storage).astype(np.float64)
    vb = y[rows].view(fb.storage).astype(np.float64)
    assert rows.any() and np.all(c[rows].view(fc.storage).astype(np.float64) == 0)
    assert np.all(((va * vb) != 0).sum(axis=1) <= 2)
