"""mv and vdot: forward against NumPy, float64 gradients against central differences, shapes refused
with the op and the shapes named."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck


def test_mv_and_vdot_match_numpy():
    rng = np.random.default_rng(0)
    a, v, w = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal(3)
    np.testing.assert_allclose(numdiff.mv(numdiff.tensor(a), numdiff.tensor(v)).numpy(), a @ v)
    np.testing.assert_allclose(numdiff.tensor(a).mv(numdiff.tensor(v)).numpy(), a @ v)
    np.testing.assert_allclose(float(numdiff.vdot(numdiff.tensor(v), numdiff.tensor(w))), np.vdot(v, w))


def test_mv_and_vdot_gradients():
    a = numdiff.randn(4, 3, dtype=numdiff.float64, requires_grad=True)
    v = numdiff.randn(3, dtype=numdiff.float64, requires_grad=True)
    w = numdiff.randn(3, dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(numdiff.mv, (a, v))
    assert gradcheck(numdiff.vdot, (v, w))


def test_bad_shapes_name_the_op_and_the_shapes():
    with pytest.raises(ValueError, match=r"mv: .*\(4, 3\) and vec \(2,\)"):
        numdiff.mv(numdiff.ones(4, 3), numdiff.ones(2))
    with pytest.raises(ValueError, match=r"mv: expects a 2-D input and a 1-D vec, got shapes \(3,\) and \(3,\)"):
        numdiff.mv(numdiff.ones(3), numdiff.ones(3))
    with pytest.raises(ValueError, match="vdot: lengths differ, 3 and 2"):
        numdiff.vdot(numdiff.ones(3), numdiff.ones(2))
