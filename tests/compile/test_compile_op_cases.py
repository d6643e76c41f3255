"""Every op case, compiled: traced on one draw of inputs, replayed on another, against eager.

Replaying on inputs other than the traced ones is what catches a value baked into the graph.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from tests.ops.op_cases import all_cases, case_rng, to_tensors

CASES = all_cases()


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _run(fn, arguments, weights):
    tensors = to_tensors(arguments)
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
