"""Every op case, compiled: traced on one draw of inputs, replayed on another, against eager.

Replaying on inputs other than the traced ones is what catches a value baked into the graph.
float64 must agree to 1e-12 (relative), float32 to 1e-5, outputs and first derivatives.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from tests.ops.op_cases import Const, all_cases, case_rng, to_tensors

CASES = all_cases()


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _single(arguments):
    """The case's float64 arrays as float32 (requires_grad as before), everything else as is."""
    out = []
    for value in arguments:
        if isinstance(value, np.ndarray) and value.dtype == np.float64:
            out.append(numdiff.tensor(value.astype(np.float32), requires_grad=True))
        elif isinstance(value, Const) and value.array.dtype == np.float64:
            out.append(numdiff.tensor(value.array.astype(np.float32)))
        else:
            out.append(to_tensors((value,))[0])
    return tuple(out)


def _run(fn, arguments, weights, make_tensors=to_tensors):
    tensors = make_tensors(arguments)
    outputs = _as_tuple(fn(*tensors))
    loss = None
    for out, w in zip(outputs, weights):
        if out.requires_grad:
            term = (out * numdiff.tensor(w.astype(out.dtype.numpy))).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    grads = [t.grad.numpy() if isinstance(t, numdiff.Tensor) and t.grad is not None else None for t in tensors]
    return [o.detach().numpy() for o in outputs], grads


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_compiled_case_matches_eager_on_new_inputs(case):
    rng = case_rng(case)
    traced_on, replayed_on = case.inputs(rng), case.inputs(rng)
    compiled = numdiff.compile(case.fn)
    first = _as_tuple(case.fn(*to_tensors(traced_on)))
    weights = [np.random.default_rng(1).standard_normal(o.shape) for o in first]
    _run(compiled, traced_on, weights)
    got_outputs, got_grads = _run(compiled, replayed_on, weights)
    want_outputs, want_grads = _run(case.fn, replayed_on, weights)
    for got, want in zip(got_outputs, want_outputs):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for got, want in zip(got_grads, want_grads):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_compiled_case_matches_eager_in_float32(case):
    rng = case_rng(case)
    traced_on, replayed_on = case.inputs(rng), case.inputs(rng)
    compiled = numdiff.compile(case.fn)
    first = _as_tuple(case.fn(*_single(traced_on)))
    weights = [np.random.default_rng(1).standard_normal(o.shape) for o in first]
    _run(compiled, traced_on, weights, _single)
    got_outputs, got_grads = _run(compiled, replayed_on, weights, _single)
    want_outputs, want_grads = _run(case.fn, replayed_on, weights, _single)
    for got, want in zip(got_outputs, want_outputs):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for got, want in zip(got_grads, want_grads):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
