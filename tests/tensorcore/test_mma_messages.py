"""Error messages of precision.mma name the problem: what was expected and what came."""

from __future__ import annotations

import numpy as np
import pytest

from precision import mma


def test_wrong_c_dtype_lists_every_accumulator_including_float64():
    a = np.ones((8, 4))
    b = np.ones((4, 8))
    with pytest.raises(TypeError, match=r"c has dtype int8; .*float64 \(f64 inputs\)"):
        mma(a, b, np.zeros((8, 8), np.int8))
    # and float64 c is indeed an accumulator: f64 (DMMA) inputs
    assert mma(a, b, np.zeros((8, 8))).tolist() == [[4.0] * 8] * 8


def test_integer_range_error_says_which_values_came():
    a = np.full((16, 64), 9, np.int8)
    a[0, 0] = -3
    b = np.ones((64, 8), np.int8)
    c = np.zeros((16, 8), np.int32)
    with pytest.raises(ValueError, match=r"range \[-8, 7\]: got values in \[-3, 9\]"):
        mma(a, b, c, fmt="int4")
    with pytest.raises(ValueError, match=r"b holds .* range \[0, 15\]: got values in \[16, 16\]"):
        mma(np.ones((16, 64), np.uint8), np.full((64, 8), 16, np.uint8), c, fmt="uint4")


def test_mixed_c_d_error_names_only_the_violated_condition():
    a = np.ones((8, 8), np.float16)
    b = np.ones((8, 8), np.float16)
    c = np.zeros((8, 8), np.float16)
    with pytest.raises(ValueError) as err:
        mma(a, b, c, arch="sm70", op="mma", d_fmt="fp32")
    msg = str(err.value)
    assert "K must equal k = 4 (got 8)" in msg
    assert "device" not in msg  # device='cpu' was right; the old message said "(got 'cpu')"
