"""Every case of the op table: forward against NumPy, gradcheck and gradgradcheck in float64."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck
from tests.ops.op_cases import all_cases, case_rng, to_arrays, to_tensors

CASES = all_cases()


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_forward_matches_numpy(case):
    arguments = case.inputs(case_rng(case))
    outputs = _as_tuple(case.fn(*to_tensors(arguments)))
    expected = _as_tuple(case.reference(*to_arrays(arguments)))
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected):
        ref = np.asarray(ref)
        assert tuple(out.shape) == ref.shape
        assert out.dtype.numpy == ref.dtype, f"{out.dtype!r} vs NumPy's {ref.dtype}"
        np.testing.assert_allclose(out.detach().numpy(), ref, rtol=case.forward_rtol, atol=case.forward_atol)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_gradcheck(case):
    tensors = to_tensors(case.inputs(case_rng(case)))
    assert any(isinstance(t, numdiff.Tensor) and t.requires_grad for t in tensors), "nothing to check"
    assert gradcheck(case.fn, tensors, **case.tolerances)


@pytest.mark.parametrize("case", [c for c in CASES if c.second_order], ids=lambda c: c.id)
def test_gradgradcheck(case):
    tensors = to_tensors(case.inputs(case_rng(case)))
    assert gradgradcheck(case.fn, tensors, **case.tolerances)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_forward_under_no_grad_records_nothing(case):
    arguments = case.inputs(case_rng(case))
    with numdiff.no_grad():
        outputs = _as_tuple(case.fn(*to_tensors(arguments)))
    recorded = _as_tuple(case.fn(*to_tensors(arguments)))
    for out, with_grad in zip(outputs, recorded):
        assert out.grad_fn is None and not out.requires_grad
        np.testing.assert_array_equal(out.numpy(), with_grad.detach().numpy())
