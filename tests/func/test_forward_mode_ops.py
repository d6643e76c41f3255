"""Every op case (tests/ops/op_cases.py, every registered op) pushed forward by jvp's rules and
fallback, against the double-vjp construction over the tape's gradient-checked backwards."""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest

import numdiff
from numdiff.func import VmapPerformanceWarning
from numdiff.func.forward_mode import _jvp_by_double_vjp, jvp
from tests.ops.op_cases import Const, all_cases

CASES = all_cases()
# Ops whose backward is not differentiable in the output gradient at 0 (it splits it by sign), so
# the double vjp gives a zero tangent; their rules are checked against jacrev below.
DOUBLE_VJP_IS_ZERO = {"logcumsumexp"}
# Ops with no second derivative, as in PyTorch: jvp's double-vjp fallback must refuse them by name.
NO_SECOND_DERIVATIVE = {"ctc_loss"}


def _floating_outputs(out):
    outs = out if isinstance(out, tuple) else (out,)
    return tuple(o for o in outs if isinstance(o, numdiff.Tensor) and o.is_floating_point())


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_op_case_pushes_forward_as_the_double_vjp(case):
    if case.op in DOUBLE_VJP_IS_ZERO:
        pytest.skip("the double vjp is no reference here; jacfwd against jacrev checks it")
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    arguments = case.inputs(rng)
    slots = [i for i, a in enumerate(arguments) if isinstance(a, np.ndarray) and not isinstance(a, Const) and a.dtype == np.float64]
    if not slots:
        pytest.skip("no floating input to push a tangent through")
    fixed = [numdiff.tensor(a.array) if isinstance(a, Const) else numdiff.tensor(a) if isinstance(a, np.ndarray) else a for a in arguments]

    def fn(*primals):
        full = list(fixed)
        for i, p in zip(slots, primals):
            full[i] = p
        return _floating_outputs(case.fn(*full))

    primals = tuple(numdiff.tensor(arguments[i]) for i in slots)
    tangents = tuple(numdiff.tensor(rng.standard_normal(arguments[i].shape)) for i in slots)
    if case.op in NO_SECOND_DERIVATIVE:
        with pytest.raises(RuntimeError, match=f"{case.op} has no second derivative"):
            jvp(fn, primals, tangents)
        return
    outputs, pushed = jvp(fn, primals, tangents)
    expected_outputs, expected = _jvp_by_double_vjp(fn, primals, list(tangents), False)
    rtol, atol = case.tolerances.get("rtol", 1e-7), case.tolerances.get("atol", 1e-9)
    for o, e in zip(outputs + pushed, expected_outputs + expected):
        np.testing.assert_allclose(o.detach().numpy(), e.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_op_case_has_the_same_jacobian_by_jacfwd_and_jacrev(case):
    """jacfwd runs the rules under vmap (tangents batched, primals not), jacrev the backwards."""
    rng = np.random.default_rng(zlib.crc32(case.id.encode()) + 1)
    arguments = case.inputs(rng)
    slots = [i for i, a in enumerate(arguments) if isinstance(a, np.ndarray) and not isinstance(a, Const) and a.dtype == np.float64]
    if not slots:
        pytest.skip("no floating input")
    fixed = [numdiff.tensor(a.array) if isinstance(a, Const) else numdiff.tensor(a) if isinstance(a, np.ndarray) else a for a in arguments]

    def fn(x):
        full = list(fixed)
        full[slots[0]] = x
        return _floating_outputs(case.fn(*full))

    x = numdiff.tensor(arguments[slots[0]])
    rtol, atol = case.tolerances.get("rtol", 1e-7), case.tolerances.get("atol", 1e-9)
    if case.op in NO_SECOND_DERIVATIVE:
        with pytest.raises(RuntimeError, match=f"{case.op} has no second derivative"), warnings.catch_warnings():
            warnings.simplefilter("ignore", VmapPerformanceWarning)
            numdiff.func.jacfwd(fn)(x)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapPerformanceWarning)
        forward, reverse = numdiff.func.jacfwd(fn)(x), numdiff.func.jacrev(fn)(x)
    for f, r in zip(forward, reverse):
        np.testing.assert_allclose(f.numpy(), r.numpy(), rtol=rtol, atol=atol)
