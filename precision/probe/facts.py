"""Facts about the recorded hardware, derived from the recordings alone (docs/hardware.md).

Run ``python -m precision.probe.facts [DIR]`` (default tests/data/sm90). Every statement
printed is a count over recorded outputs, classified by properties of the *inputs* computed
here (NaN/Inf/zero operands, the exact sum), plus examples in hex (instruction, kind, tile,
row, column; the row of A, the column of B, c, and the recorded d).

For the exponent-floor and alignment questions, an independent integer model of one fused
block is evaluated here with alternative parameters: terms truncated to multiples of
2^(E-F), summed exactly, rounded once (fp32: toward zero; fp16: to nearest even), where E is
the largest term exponent and a zero term (zero product, zero c) counts with exponent e_zero.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from precision.console import run_main
from precision.formats import Format
from precision.probe.capture import Recording, load_recording, recording_paths
from precision.probe.catalog import F16, F32
from precision.probe.inputs import values

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "sm90"


def _hex(x, width: int) -> str:
    return f"{int(x):0{width // 4}x}"


def _example(rec: Recording, t: int, i: int, j: int) -> str:
    wa, wc = rec.instr.a_fmt.container_bits, rec.instr.c_fmt.container_bits
    return (
        f"    {rec.instr.name} kind={rec.kinds[rec.kind[t]]} tile={t} [{i},{j}]: "
        f"c={_hex(rec.c[t, i, j], wc)} d={_hex(rec.d[t, i, j], wc)}\n"
        f"      a[row]  = {' '.join(_hex(x, wa) for x in rec.a[t, i])}\n"
        f"      b[:,col]= {' '.join(_hex(x, wa) for x in rec.b[t, :, j])}"
    )


def _pct(n: int, m: int) -> str:
    return f"{m}/{n}" + (f" ({100.0 * m / n:.2f}%)" if n else "")


class Inputs:
    """Per-output properties of one recording's inputs (arrays [T,16,8])."""

    def __init__(self, rec: Recording):
        fa, fc = rec.instr.a_fmt, rec.instr.c_fmt
        A, B, C = values(fa, rec.a), values(fa, rec.b), values(fc, rec.c)
        self.A, self.B, self.C = A, B, C
        a4, b4 = A[:, :, :, None], B[:, None, :, :]
        with np.errstate(invalid="ignore", over="ignore"):
            P = a4 * b4  # exact for finite inputs (<= 22 significant bits)
        self.P = P
        self.nan_in = (np.isnan(a4).any(2) | np.isnan(b4).any(2)) | np.isnan(C)
        self.inf0 = ((np.isinf(a4) & (b4 == 0)) | ((a4 == 0) & np.isinf(b4))).any(2)
        self.pinf = (P == np.inf).any(2) | (C == np.inf)
        self.ninf = (P == -np.inf).any(2) | (C == -np.inf)
        self.finite = ~(self.nan_in | self.inf0 | self.pinf | self.ninf)
        with np.errstate(invalid="ignore", over="ignore"):
            self.approx = np.where(self.finite, P.sum(2) + C, np.nan)  # float64 sum
        D = values(fc, rec.d)
        self.D = D
        self.d_nan = np.isnan(D)


# ---------------------------------------------------------------------------------------------
# independent one-block model (finite inputs)


def _decode(x: np.ndarray, fmt: Format):
    """(m, e): |x| = m * 2^(e - mantissa_bits), m integer, e = max(floor(log2|x|), emin)."""
    ax = np.abs(x)
    _, ex = np.frexp(ax)
    e = np.maximum(np.where(ax > 0, ex - 1, fmt.emin), fmt.emin)
    m = np.ldexp(ax, fmt.mantissa_bits - e).astype(np.int64)
    return m, e


def block_model(
    A: np.ndarray, B: np.ndarray, C: np.ndarray, fa: Format, fc: Format, F: int, e_zero: int
) -> np.ndarray:
    """Output bits of one fused block per row: A [n,L], B [n,L], C [n] finite values.

    A zero result (exact, or rounded to zero) is +0, as the recordings show (``zero_sign``).
    """
    ma, ea = _decode(A, fa)
    mb, eb = _decode(B, fa)
    mp = ma * mb
    ep = np.where(mp > 0, ea + eb, e_zero)
    sp = np.signbit(A) ^ np.signbit(B)
    mc, ec = _decode(C, fc)
    ec = np.where(mc > 0, ec, e_zero)
    E = np.maximum(ep.max(1), ec)

    def align(m, e, frac):
        sh = e - E[..., None] + F - frac if m.ndim == 2 else e - E + F - frac
        return np.where(sh >= 0, m << np.clip(sh, 0, 62), m >> np.clip(-sh, 0, 63))

    S = (np.where(sp, -1, 1) * align(mp, ep, 2 * fa.mantissa_bits)).sum(1)
    S = S + np.where(np.signbit(C), -1, 1) * align(mc, ec, fc.mantissa_bits)
    V = np.ldexp(S.astype(np.float64), E - F)  # exact: |S| < 2^40
    with np.errstate(over="ignore"):  # overflow to Inf is what the model computes here
        out = V.astype(np.float16 if fc is F16 else np.float32)
    if fc is not F16:
        toward = np.abs(out.astype(np.float64)) > np.abs(V)
        out = np.where(toward, np.nextafter(out, np.float32(0)), out)
        out = np.where(np.abs(V) >= 2.0**128, np.copysign(np.float32(np.inf), V), out)
    out = np.where(out == 0, 0.0, out).astype(fc.storage)  # any zero result -> +0
    return out.view(fc.bits_dtype)


# ---------------------------------------------------------------------------------------------
# the questions


def specials(rec: Recording, inp: Inputs, out: list[str]) -> None:
    fc = rec.instr.c_fmt
    no_nan = ~inp.nan_in
    groups = [
        ("a NaN operand (a, b or c)", inp.nan_in),
        ("Inf*0 product, no NaN operand", no_nan & inp.inf0),
        (
            "+Inf and -Inf among products and c, no NaN, no Inf*0",
            no_nan & ~inp.inf0 & inp.pinf & inp.ninf,
        ),
    ]
    for label, m in groups:
        n = int(m.sum())
        if n:
            out.append(f"  {label}: output NaN in {_pct(n, int((m & inp.d_nan).sum()))}")
    for sign, has, lacks in (("+", inp.pinf, inp.ninf), ("-", inp.ninf, inp.pinf)):
        m = no_nan & ~inp.inf0 & has & ~lacks
        n = int(m.sum())
        if n:
            want = np.inf if sign == "+" else -np.inf
            out.append(
                f"  only {sign}Inf terms (no NaN, no Inf*0): output {sign}Inf in "
                f"{_pct(n, int((m & (inp.D == want)).sum()))}"
            )
    nan_bits = rec.d[inp.d_nan]
    if nan_bits.size:
        pats, counts = np.unique(nan_bits, return_counts=True)
        shown = ", ".join(
            f"0x{_hex(p, fc.container_bits)} x{c}" for p, c in zip(pats, counts, strict=True)
        )
        in_nan = np.concatenate([rec.c[np.isnan(inp.C)].ravel()])
        out.append(
            f"  NaN output bit patterns: {shown} (c held {np.unique(in_nan).size} "
            f"distinct NaN patterns)"
        )
    pm = np.argwhere(no_nan & ~inp.inf0 & inp.pinf & inp.ninf)
    if len(pm):
        out.append("  example, +Inf and -Inf in one block:")
        out.append(_example(rec, *pm[0]))


def overflow(rec: Recording, inp: Inputs, out: list[str]) -> None:
    fc = rec.instr.c_fmt
    big = float(np.finfo(fc.storage).max)
    limit = 2.0**128 if fc is F32 else 65520.0  # RZ / RNE overflow thresholds
    m = inp.finite & (np.abs(inp.approx) >= limit)
    n = int(m.sum())
    if not n:
        return
    same_inf = m & np.isinf(inp.D) & (np.signbit(inp.D) == np.signbit(inp.approx))
    at_max = m & (np.abs(inp.D) == big)
    out.append(
        f"  finite operands, |exact sum| >= {limit:g}: output Inf of the sum's sign in "
        f"{_pct(n, int(same_inf.sum()))}; +-max finite in {int(at_max.sum())}"
    )
    idx = np.argwhere(same_inf)
    if len(idx):
        out.append(_example(rec, *idx[0]))


def zero_sign(rec: Recording, inp: Inputs, out: list[str]) -> None:
    """Sign of an exactly zero result, of results that underflow to zero, and -0 operands."""
    fc = rec.instr.c_fmt
    d_neg0 = rec.d == fc.bits_dtype.type(fc.bit_layout.sign_mask)
    d_pos0 = rec.d == 0
    cand = np.argwhere(inp.finite & (inp.approx == 0))
    exact0 = np.zeros(inp.D.shape, bool)
    for t, i, j in cand:  # confirm exactly (fsum is correctly rounded)
        terms = list(inp.P[t, i, :, j]) + [inp.C[t, i, j]]
        exact0[t, i, j] = math.fsum(terms) == 0.0
    allzero = exact0 & (inp.P == 0).all(2) & (inp.C == 0)
    all_neg0 = allzero & np.signbit(inp.P).all(2) & np.signbit(inp.C)
    cases = [
        ("exact sum 0 from nonzero terms", exact0 & ~allzero),
        ("all terms zero, not all -0", allzero & ~all_neg0),
        ("all terms -0 (every product -0 and c = -0)", all_neg0),
    ]
    for label, m in cases:
        n = int(m.sum())
        if n:
            out.append(
                f"  {label}: +0 in {_pct(n, int((m & d_pos0).sum()))}, -0 in "
                f"{int((m & d_neg0).sum())}, nonzero (terms truncated in alignment) "
                f"in {int((m & ~d_pos0 & ~d_neg0).sum())}"
            )
    under = inp.finite & ~exact0 & (inp.approx < 0) & (inp.D == 0)
    if under.any():
        n = int(under.sum())
        out.append(
            f"  negative nonzero exact sum, output zero: +0 in "
            f"{_pct(n, int((under & d_pos0).sum()))}, -0 in {int((under & d_neg0).sum())}"
        )
    idx = np.argwhere(all_neg0)
    if len(idx):
        out.append(_example(rec, *idx[0]))


def floor_and_alignment(rec: Recording, inp: Inputs, out: list[str]) -> None:
    """Model agreement for e_zero and F alternatives over finite-operand outputs."""
    fa, fc = rec.instr.a_fmt, rec.instr.c_fmt
    t, i, j = np.nonzero(inp.finite)
    A, B, C = inp.A[t, i, :], inp.B[t, :, j], inp.C[t, i, j]
    d = rec.d[t, i, j]
    zero_c = C == 0
    floors = (-133, -132, -126) if fc is F32 else (-21, -20, -14)
    hyps = [(25, ez) for ez in floors] + [(24, floors[0]), (26, floors[0])]
    preds = {h: block_model(A, B, C, fa, fc, *h) for h in hyps}
    n = len(d)
    for (F, ez), p in preds.items():
        out.append(f"  model F={F}, e_zero={ez}: matches {_pct(n, int((p == d).sum()))}")
    p1 = preds[(25, floors[0])]
    for ez in floors[1:]:
        p2 = preds[(25, ez)]
        differ = p1 != p2
        nd = int(differ.sum())
        out.append(
            f"  outputs where e_zero={floors[0]} and {ez} predict different bits: {nd} "
            f"(c = +-0 in {int((differ & zero_c).sum())}); hardware equals the "
            f"{floors[0]} prediction in {int((differ & (p1 == d)).sum())}, the {ez} "
            f"prediction in {int((differ & (p2 == d)).sum())}"
        )
        if nd:
            k = (
                int(np.argmax(differ & zero_c))
                if (differ & zero_c).any()
                else int(np.argmax(differ))
            )
            out.append(
                f"    e.g. predictions {floors[0]} -> {_hex(p1[k], fc.container_bits)}, "
                f"{ez} -> {_hex(p2[k], fc.container_bits)}:"
            )
            out.append(_example(rec, t[k], i[k], j[k]))


def tf32_lowbits(rec: Recording, out: list[str]) -> None:
    sel = rec.select("tf32_lowbits")
    low, trunc, rne = sel.d[0::3], sel.d[1::3], sel.d[2::3]
    n = low.size
    out.append(
        f"  outputs with operands' low 13 bits set equal those with the bits cleared: "
        f"{_pct(n, int((low == trunc).sum()))}; equal those with operands rounded to "
        f"nearest at bit 13: {int((low == rne).sum())}/{n} "
        f"(cleared vs rounded operands differ in {int((trunc != rne).sum())} outputs)"
    )
    k = np.argwhere(low != rne)
    if len(k):
        t3, i, j = k[0]
        idx = np.nonzero(rec.kind == rec.kinds.index("tf32_lowbits"))[0][3 * t3]
        out.append(_example(rec, idx, i, j))
        out.append(_example(rec, idx + 2, i, j).replace("    ", "    (rounded) ", 1))


def int_overflow(rec: Recording, out: list[str]) -> None:
    A, B = values(rec.instr.a_fmt, rec.a), values(rec.instr.a_fmt, rec.b)
    exact = np.matmul(A, B) + values(rec.instr.c_fmt, rec.c)
    d = rec.d.view(np.int32).astype(np.int64)
    over = (exact > 2**31 - 1) | (exact < -(2**31))
    n = int(over.sum())
    wrapped = ((exact + 2**31) % 2**32) - 2**31
    clamped = np.clip(exact, -(2**31), 2**31 - 1)
    out.append(
        f"  exact sum outside int32: {n} outputs; d == sum mod 2^32 in "
        f"{int((over & (d == wrapped)).sum())}, d == clamped in "
        f"{int((over & (d == clamped)).sum())}; in-range outputs exact: "
        f"{_pct(int((~over).sum()), int((~over & (d == exact)).sum()))}"
    )


def report(path: str | Path = DEFAULT_DIR) -> str:
    """All facts as text."""
    out: list[str] = [f"# facts derived from {path}"]
    for p in recording_paths(path):
        rec = load_recording(p)
        instr = rec.instr
        if instr.nchain > 1:
            continue
        out.append(f"\n## {instr.name}: {instr.ptx} ({rec.d.size} outputs)")
        if not instr.floating:
            int_overflow(rec, out)
            continue
        inp = Inputs(rec)
        specials(rec, inp, out)
        overflow(rec, inp, out)
        zero_sign(rec, inp, out)
        if instr.k in (8, 16):  # one fused block per instruction (not the fp8 lowering)
            floor_and_alignment(rec, inp, out)
        if "tf32_lowbits" in rec.kinds:
            tf32_lowbits(rec, out)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Print :func:`report` of DIR; a DIR without mma.sync recordings is one ``error:`` line
    and exit status 2."""
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m precision.probe.facts",
        description="Facts about the recorded hardware, derived from the recordings alone.",
    )
    p.add_argument(
        "dir",
        nargs="?",
        default=str(DEFAULT_DIR),
        metavar="DIR",
        help="directory of hand-written mma.sync recordings (default: tests/data/sm90)",
    )
    args = p.parse_args(argv)
    if not Path(args.dir).exists():
        print(
            f"error: {args.dir}: no such directory (expected a directory of mma.sync "
            f"recordings such as tests/data/sm90, or one of its .npz files)",
            file=sys.stderr,
        )
        return 2
    try:
        text = report(args.dir)
    except FileNotFoundError as exc:  # a directory without recordings: the message says so
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {args.dir}: not an mma.sync recording ({exc})", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    run_main(main)
