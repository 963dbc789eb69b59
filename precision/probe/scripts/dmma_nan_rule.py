"""Issue 15: which NaN payload rule DMMA follows, from the H200 f64 recordings (CPU, ~10 s).

    PYTHONPATH=. python precision/probe/scripts/dmma_nan_rule.py

For every NaN output of tests/data/sm90_mma/*_f64_f64_f64_f64.npz and
tests/data/sm90_wmma/f64_f64_m8n8k4.npz the FMA chain d = RN(a_k b_k + d), k increasing, is
rescanned with Python ints under candidate rules; each rule's exact-match count per file is
printed. The numeric chain (dmma.fma) only decides whether a step with no NaN operand makes
a NaN (Inf*0, Inf - Inf); the payload is chosen by the rule alone. Candidates:

- ``first(XYZ)``: the first NaN in the order X, Y, Z (a = a_k, b = b_k, c = running d),
  quieted (| 1 << 51); an invalid step with no NaN operand gives 0xFFF8000000000000;
- ``max payload``: the NaN operand with the largest quieted magnitude bits wins.

Also counts the steps at which NaN operands with different quieted payloads met (the evidence
that separates the orders). Result on the H200 recordings: first(bca), i.e. B beats the
accumulator beats A, matches all 7325 NaN outputs; see docs/integer_f64.md.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np

from precision.console import run_main
from precision.probe import packed
from precision.tensorcore import dmma

ROOT = Path(__file__).resolve().parents[3] / "tests" / "data"
Q = 1 << 51
GEN = 0xFFF8000000000000
Rule = Callable[[dict[str, int]], int]


def is_nan(u: int) -> bool:
    return (u & 0x7FFFFFFFFFFFFFFF) > 0x7FF0000000000000


def sources() -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    out = []
    for s in ("m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"):
        r = packed.load(ROOT / "sm90_mma" / f"{s}_f64_f64_f64_f64.npz")
        out.append((f"mma {s}", r.a, r.b, r.c, r.d))
    with np.load(ROOT / "sm90_wmma" / "f64_f64_m8n8k4.npz") as z:
        out.append(("wmma m8n8k4", z["a"], z["b"], z["c"], z["d"]))
    return out


def traces():
    """Per file: list of (a_k ints, b_k ints, c int, d int, numeric chain is NaN after step k)."""
    for name, a, b, c, d in sources():
        t, i, j = np.nonzero(np.isnan(d.view(np.float64)))
        A, B, C, D = a[t, i, :], b[t, :, j], c[t, i, j], d[t, i, j]
        acc = C.view(np.float64)
        after = []
        with np.errstate(all="ignore"):
            for k in range(A.shape[1]):
                acc = dmma.fma(A[:, k].view(np.float64), B[:, k].view(np.float64), acc)
                after.append(np.isnan(acc))
        nan_after = np.stack(after, 1)
        yield (
            name,
            [
                (A[n].tolist(), B[n].tolist(), int(C[n]), int(D[n]), nan_after[n].tolist())
                for n in range(len(t))
            ],
        )


def first(order: str) -> Rule:
    return lambda ops: next(ops[o] | Q for o in order if o in ops)


def max_payload(ops: dict[str, int]) -> int:
    return max((x | Q for x in ops.values()), key=lambda x: (x & 0x7FFFFFFFFFFFFFFF, x))


def simulate(trace, rule: Rule, conflicts: collections.Counter | None = None) -> int:
    A, B, C, _, nan_after = trace
    acc: int | None = C if is_nan(C) else None  # NaN bits of the running d, None if not NaN
    for k, (x, y) in enumerate(zip(A, B, strict=True)):
        ops = {o: v for o, v in (("a", x), ("b", y), ("c", acc)) if v is not None and is_nan(v)}
        if conflicts is not None and len({v | Q for v in ops.values()}) > 1:
            conflicts["".join(sorted(ops))] += 1
        acc = rule(ops) if ops else (GEN if nan_after[k] else None)
    assert acc is not None
    return acc


def main() -> None:
    rules: dict[str, Rule] = {
        f"first({''.join(p)})": first("".join(p)) for p in itertools.permutations("abc")
    }
    rules["max payload"] = max_payload
    data = dict(traces())
    print("rule".ljust(14) + "".join(f"{n:>16}" for n in data) + f"{'total':>14}")
    for rname, rule in rules.items():
        cols, hit, tot = [], 0, 0
        for tr in data.values():
            ok = sum(simulate(t, rule) == t[3] for t in tr)
            cols.append(f"{ok:>9}/{len(tr):<6}")
            hit, tot = hit + ok, tot + len(tr)
        print(rname.ljust(14) + "".join(cols) + f"{hit:>8}/{tot}")
    for name, tr in data.items():
        cnt: collections.Counter = collections.Counter()
        for t in tr:
            simulate(t, first("bca"), cnt)
        snan = sum(not (v & Q) for t in tr for v in t[0] + t[1] + [t[2]] if is_nan(v))
        print(
            f"{name}: steps where NaNs with different payloads met {dict(cnt)}; "
            f"signalling NaN operands {snan}"
        )


if __name__ == "__main__":
    run_main(main)
